"""The Long Range Graph Benchmark (Dwivedi et al., NeurIPS 2022 Datasets and Benchmarks), read
from LRGB's published files: Peptides-func and Peptides-struct (:mod:`.peptides`), found, checked
against LRGB's release and their split files read by :mod:`.lrgb_files`; PascalVOC-SP and
COCO-SP (:mod:`.superpixels_sp`) and PCQM-Contact (:mod:`.pcqm_contact`), whose published
graph tuples :mod:`.graph_tuples` checks."""
