"""The start of every fake chapter binary the bench tests run: it records its command line in a
calls file and answers --device-info and --help as the harness does (format with python, name, calls)."""

PREAMBLE = r'''#!{python}
import csv, os, sys
args = sys.argv[1:]
with open({calls!r}, "a") as f:
    f.write("{name} " + " ".join(args) + "\n")
if "--device-info" in args:
    print("name: Fake GPU\nslug: fake-gpu\ncuda: 13.0")
    sys.exit(0)
if "--help" in args:
    print("usage: {name} [flags]")
'''
