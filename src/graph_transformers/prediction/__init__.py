"""Predictions of a trained run on new inputs: molecules as SMILES strings, or graphs.

:func:`load_run` reads a run directory (config and checkpoint) into a :class:`TrainedRun`, whose
:meth:`~TrainedRun.predict` featurizes SMILES the way the run's dataset does (OGB atom and bond
features for MoleculeNet, ogbg-molhiv and molecule CSVs, the 28 atom types of ZINC), applies the
run's encodings (the pre-transform of ``config.encodings``: LapPE, RWSE, shortest paths, ...) to
every graph, and runs the model in eval mode without gradients. Every input gives one row of the
:class:`Predictions`, in input order; an input that cannot be used (an invalid SMILES, a graph
whose features do not fit the model) keeps its row, with the reason in ``status``.

The command line form is ``graph-transformers predict RUN_DIR --data FILE --out predictions.csv``;
:func:`read_inputs` reads its ``FILE`` (a SMILES CSV or a ``.pt`` file of graphs).

A node-level run on one graph (a node table, a one-graph ``.pt`` file, Cora) predicts the nodes of
that graph instead: :meth:`~TrainedRun.predict_nodes` gives :class:`NodePredictions`, one row per
node with the user's node id, the prediction, the class probabilities and the node's split
(``graph-transformers predict RUN_DIR --out nodes.csv``, without ``--data``).

The package's modules: :mod:`.trained_run` (loading a run, :class:`TrainedRun`), :mod:`.results`
(:class:`Predictions`, :class:`NodePredictions` and their CSV files) and :mod:`.inputs` (input
files).
"""
from __future__ import annotations

from .inputs import load_graphs, read_csv_columns, read_inputs, read_smiles_csv
from .results import NodePredictions, Predictions
from .trained_run import TrainedRun, load_run

__all__ = ["Predictions", "NodePredictions", "TrainedRun", "load_run", "read_inputs",
           "load_graphs", "read_csv_columns", "read_smiles_csv"]
