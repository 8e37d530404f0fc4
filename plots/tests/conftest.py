import sys
from pathlib import Path

PLOTS = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(PLOTS))
