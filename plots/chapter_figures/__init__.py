"""One module per chapter's explanatory pictures: chNN.py defines CHAPTER (the chapter folder) and
FIGURES ({file name: function(path)}). figures.py collects them; `make figures` draws them all."""
