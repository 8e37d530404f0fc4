"""The README markers the plot tests write and look for (tut_plots.markdown.markers)."""
from tut_plots.markdown import markers

README_BEGIN, README_END = markers("gemm")
GEMM_TF32_BEGIN, GEMM_TF32_END = markers("gemm-tf32")
CONV_README_BEGIN, CONV_README_END = markers("conv")
CONV_TF32_BEGIN, CONV_TF32_END = markers("conv-tf32")
GCN_README_BEGIN, GCN_README_END = markers("gcn")
CHAPTER_BEGIN, CHAPTER_END = markers()
