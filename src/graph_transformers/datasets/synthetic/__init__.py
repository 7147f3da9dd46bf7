"""Datasets generated in code from a seed: PATTERN / CLUSTER (:mod:`.sbm`, drawn from the SBM
graphs of :mod:`.sbm_graph`), CSL (:mod:`.csl`, its split files in ``csl_splits/``), TSP
(:mod:`.tsp`, tours by :mod:`.tsp_solver`) and the large SBM graph for node tasks at scale
(:mod:`.large_graph`)."""
