"""``python -m graph_transformers.cli``: the ``graph-transformers`` command."""
import sys

from . import main

sys.exit(main())
