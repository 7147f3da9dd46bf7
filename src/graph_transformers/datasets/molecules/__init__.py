"""Molecular graphs: ZINC-12k (:mod:`.zinc`), MoleculeNet, ogbg-molhiv and a user's molecule CSV
(:mod:`.moleculenet`, with the OGB featurization and the scaffold split), OGB's published
ogbg-molhiv files (:mod:`.ogb`, needs the ``[ogb]`` extra)."""
