"""A trained run loaded for prediction (:func:`load_run`): a :class:`TrainedRun` featurizes
SMILES the way the run's dataset does, applies the run's encodings and runs the model in eval
mode (:meth:`TrainedRun.predict`, :meth:`TrainedRun.predict_nodes`)."""
from __future__ import annotations

import copy
import logging
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

import torch
from torch import Tensor
from torch_geometric.data import Batch, Data

from ..data.registry import DatasetSpec, build_pre_transform
from ..models.encoders import check_features
from ..models.utils import check_inputs
from ..training.config import Config
from .results import _FIXED, EMPTY, OK, NodePredictions, Predictions, _reason

log = logging.getLogger(__name__)


class TrainedRun:
    """A trained model with what it was trained on: the config, the dataset spec (features,
    task, targets) and the encodings to compute for new graphs. Made by :func:`load_run`.

    Attributes:
        config (Config): the run's config.
        spec (DatasetSpec): the dataset spec (features, task, targets).
        model (torch.nn.Module): the trained model, in eval mode.
        run_dir (Path | None): the run directory, ``None`` for a run not loaded from disk.
        checkpoint (str | None): the checkpoint loaded: ``"best"`` or ``"last"``.
        binding (dict): what the checkpoint stores of its run (run id, data fingerprint,
            config; :func:`~graph_transformers.training.binding.stored_binding`); empty for a
            run not loaded from disk.
        allow_data_change (bool): :meth:`predict_nodes` proceeds on data that differ from the
            checkpoint's (``--allow-data-change``).
        pre_transform (BaseTransform | None): the run's encodings as a PyG transform, or
            ``None``.
    """

    def __init__(self, config: Config, spec: DatasetSpec, model: torch.nn.Module,
                 run_dir: str | Path | None = None, checkpoint: str | None = None) -> None:
        self.config = config
        self.spec = spec
        self.model = model.eval()
        self.run_dir = Path(run_dir) if run_dir is not None else None
        self.checkpoint = checkpoint
        self.binding: dict[str, Any] = {}
        self.allow_data_change = False
        self.pre_transform = build_pre_transform(config.encodings)
        #: the in-memory graphs of a ``graph_list`` run (:func:`load_run`'s ``dataset``)
        self._dataset: Any = None
        from ..training.build import resolve_edge_features
        # ``auto`` resolved as the model was built (``bool("auto")`` would be true)
        self._edge_features = resolve_edge_features(config.model, spec)

    def __repr__(self) -> str:
        where = f"{self.run_dir}, {self.checkpoint}" if self.run_dir else "not from a run"
        return f"TrainedRun({self.config.model.name} on {self.spec.name}, {where})"

    def to(self, device: torch.device | str) -> TrainedRun:
        """Moves the model to ``device`` (predictions are computed there); returns ``self``."""
        self.model.to(device)
        return self

    @property
    def columns(self) -> tuple[str, ...]:
        """Names of the prediction columns (see :attr:`Predictions.columns`)."""
        n = self.spec.out_dim
        if self.spec.task == "classification":
            names = [f"prob_{k}" for k in range(n)]
        elif self.spec.targets is not None and len(self.spec.targets) == n:
            names = list(self.spec.targets)
        else:
            names = [f"pred_{k}" for k in range(n)]
        return tuple(f"pred_{c}" if c in _FIXED else c for c in names)

    def featurize(self, smiles: str) -> Data:
        """A SMILES string as a graph with the features of the run's dataset (no encodings).

        Raises:
            ValueError: the run's dataset is not molecular (see :attr:`DatasetSpec.featurize`),
                ``smiles`` is empty or only whitespace (:data:`EMPTY`), or RDKit cannot use it
                (the message names it and says why).
            MissingDependencyError: RDKit is not installed.
        """
        self._require_featurizer()
        if not isinstance(smiles, str) or not smiles.strip():
            raise ValueError(EMPTY)
        return self.spec.featurize(smiles.strip())

    def _require_featurizer(self) -> None:
        if self.spec.featurize is None:
            raise ValueError(
                f"{self._source()} was trained on {self.spec.name!r}, whose graphs are not "
                "molecules: it cannot take SMILES; pass graphs with the dataset's features "
                "(a list of torch_geometric Data, or a .pt file of them) instead")

    def _source(self) -> str:
        return f"run {self.run_dir}" if self.run_dir is not None else "this model"

    def prepare(self, item: str | Data) -> Data:
        """One input as the model sees it: a SMILES featurized (:meth:`featurize`) or a copy of a
        ``Data`` without its label ``y``, its features checked against the run's dataset, then
        the run's encodings computed. The input is not modified.

        Raises:
            ValueError: the input cannot be used; the message says why (invalid SMILES, missing
                or misshapen features, ids out of range, NaN, an empty graph).
            TypeError: ``item`` is neither a string nor a ``Data``.
        """
        if isinstance(item, str):
            graph = self.featurize(item)
        elif isinstance(item, Data):
            graph = copy.copy(item)  # the encodings are set on the copy, never on the input
            if "y" in graph:
                del graph.y
        else:
            raise TypeError(f"not a SMILES string or a torch_geometric Data: "
                            f"{type(item).__name__}")
        spec = self.spec
        check_inputs(graph, need_edge_attr=self._edge_features)
        check_features(graph.x, "node", num_types=spec.node_types, in_dim=spec.node_dim)
        if self._edge_features:
            check_features(graph.edge_attr, "edge", num_types=spec.edge_types,
                           in_dim=spec.edge_dim)
        if self.pre_transform is not None:
            graph = self.pre_transform(graph)
            check_inputs(graph, need_edge_attr=self._edge_features)  # finite encodings
        return graph

    @torch.no_grad()
    def predict(self, inputs: Iterable[str | Data] | str | Data, batch_size: int | None = None
                ) -> Predictions:
        r"""Predicts every input, in order: SMILES strings (molecular runs), ``Data`` graphs with
        the features of the run's dataset, or a PyG ``Dataset`` (its labels are ignored).

        Graph-level runs only: a node- or edge-level run (PATTERN, CLUSTER, Cora, TSP) raises
        a ``ValueError`` (evaluate those with ``graph-transformers evaluate``).

        Args:
            inputs: a list (any iterable) of SMILES strings and/or ``Data``, a ``Dataset``, or a
                single string or ``Data``.
            batch_size: graphs per forward pass (default: the run's ``data.eval_batch_size``, else
                ``data.batch_size``). Predictions do not depend on it.

        Returns:
            :class:`Predictions`: ``values`` ``[num_inputs, out_dim]``, ``status`` per input
            (``"ok"`` or why it could not be predicted: such inputs keep their row).

        Raises:
            ValueError: a node- or edge-level run; SMILES given to a run whose dataset is not
                molecular; ``batch_size`` < 1.
            MissingDependencyError: SMILES given without RDKit installed.

        Example::

            >>> from graph_transformers import load_run
            >>> run = load_run("runs/esol-gt-lappe")  # doctest: +SKIP
            >>> preds = run.predict(["CCO", "c1ccccc1", "not a molecule"])  # doctest: +SKIP
            >>> preds.values.shape, preds.status[2]  # doctest: +SKIP
            (torch.Size([3, 1]), "invalid SMILES 'not a molecule': SMILES syntax error")
        """
        if self.spec.level != "graph":
            hint = "predict_nodes() (CLI: predict without --data) predicts the nodes of its " \
                "graph" if self.spec.level == "node" else "use graph-transformers evaluate " \
                "for its splits"
            raise ValueError(f"predict takes graph-level runs; {self._source()} is a "
                             f"{self.spec.level}-level task on {self.spec.name!r} ({hint})")
        items = _as_list(inputs)
        if any(isinstance(x, str) for x in items):
            self._require_featurizer()
            from .._optional import require
            require("rdkit", "predicting from SMILES")  # once, not as every row's status
        bs = batch_size if batch_size is not None else \
            (self.config.data.eval_batch_size or self.config.data.batch_size)
        if bs < 1:
            raise ValueError(f"batch_size must be >= 1, got {bs}")
        self.model.eval()
        status: list[str] = [OK] * len(items)
        outputs: list[Tensor | None] = [None] * len(items)
        for start in range(0, len(items), bs):
            graphs, where = [], []
            for i in range(start, min(start + bs, len(items))):
                try:
                    graphs.append(self.prepare(items[i]))
                    where.append(i)
                except (ValueError, TypeError, IndexError, RuntimeError) as err:
                    status[i] = _reason(err)
            for i, out in zip(where, self._forward(graphs, where, status)):
                outputs[i] = out
        return self._collect(outputs, status, items)

    @torch.no_grad()
    def predict_nodes(self, dataset: Any = None) -> NodePredictions:
        """Predicts every node of the graph a single-graph node-level run trained on (a node
        table, a one-graph ``.pt`` file, Cora, CiteSeer, ...): the run's data is loaded again as
        in training (with its encodings) and the whole graph goes through the model in one
        forward pass, in eval mode.

        Args:
            dataset: the in-memory graph(s) a ``graph_transformers.train(config,
                dataset=[graph])`` run trained on (default: those given to :func:`load_run`);
                ``None`` for data named by the config.

        Returns:
            :class:`NodePredictions`: one row per node (``values`` ``[N, out_dim]``) with the
            user's node ids, class names (a node table's labels) and each node's split.

        The data are bound as ``evaluate`` binds them: their fingerprint must match the
        checkpoint's (:attr:`allow_data_change` proceeds anyway), and each node's split is the
        one the run trained with, read from the run's ``node_split.pt`` (by node id), never
        drawn again from the current data.

        Raises:
            ValueError: a graph- or edge-level run, a run on several graphs (PATTERN, CLUSTER),
                or an in-memory run without ``dataset``.
            RunError: the data differ from the checkpoint's (labels, edges or nodes edited)
                without :attr:`allow_data_change`, or with it for a run that stored no node
                split (trained before ``node_split.pt`` existed).
            DataNotFoundError, DataError: the run's data files are gone or unreadable.

        Example::

            >>> run = load_run("runs/my-nodes")  # doctest: +SKIP
            >>> run.predict_nodes().to_csv("nodes.csv")  # doctest: +SKIP
        """
        if self.spec.level != "node":
            raise ValueError(f"predict_nodes takes node-level runs; {self._source()} is a "
                             f"{self.spec.level}-level task on {self.spec.name!r} (use "
                             "predict(inputs) for graph-level runs)")
        from ..training.module import split_output
        from ..training.splits import resolve_data
        _, splits = resolve_data(self.config, dataset if dataset is not None else self._dataset)
        first = next(iter(splits.values()))
        if len(first) != 1:
            raise ValueError(f"predict_nodes takes a run on one graph; {self._source()} trained "
                             f"on {self.spec.name!r}, {len(first)} graphs in a split (use "
                             "graph-transformers evaluate for its splits)")
        graph = copy.copy(first[0])
        n = int(graph.num_nodes)
        ids = getattr(first, "node_ids", None) or tuple(str(i) for i in range(n))
        where = self._node_split(splits, ids)
        for key in ("y", "node_mask"):
            if key in graph:
                del graph[key]
        self.model.eval()
        device = next((p.device for p in self.model.parameters()), torch.device("cpu"))
        out = split_output(self.model(Batch.from_data_list([graph]).to(device)))[0]
        out = out.to(torch.promote_types(out.dtype, torch.float32)).reshape(n, -1).cpu()
        task, dim = self.spec.task, self.spec.out_dim
        if task == "classification":
            names = tuple(getattr(first, "classes", None) or (str(k) for k in range(dim)))
            return NodePredictions(task, tuple(ids), tuple(where),
                                   tuple(f"p_{c}" for c in names), torch.softmax(out, dim=-1),
                                   out.argmax(-1), names)
        targets = self.spec.targets if self.spec.targets and len(self.spec.targets) == dim \
            else tuple(str(k) for k in range(dim))
        if task == "binary":
            return NodePredictions(task, tuple(ids), tuple(where),
                                   tuple(f"p_{t}" for t in targets), torch.sigmoid(out))
        columns = ("prediction",) if dim == 1 else tuple(f"prediction_{t}" for t in targets)
        return NodePredictions(task, tuple(ids), tuple(where), columns, out)

    def _node_split(self, splits: dict[str, Any], ids: Sequence[str]) -> list[str]:
        """Each node's split as the run trained on it (see :meth:`predict_nodes`)."""
        from ..errors import RunError
        from ..training.binding import check_same_data, data_fingerprint, read_node_split
        source = f"checkpoint {self.checkpoint}.ckpt of {self.run_dir}"
        changed = check_same_data(self.binding.get("data"), data_fingerprint(splits), source,
                                  self.allow_data_change)
        stored = read_node_split(self.run_dir) if self.run_dir is not None else None
        if stored is None:
            if changed:
                raise RunError(f"--allow-data-change: {self.run_dir} stores no node split "
                               "(node_split.pt; trained before it existed), so the split it "
                               "trained with cannot be recovered from the changed data; "
                               "predict with the data it trained on, or train again")
            where = ["none"] * len(ids)  # the data are the checkpoint's: so is their split
            for name, ds in splits.items():
                mask = getattr(ds[0], "node_mask", None)
                if mask is not None:
                    for i in torch.nonzero(mask).view(-1).tolist():
                        where[i] = name
            return where
        names, codes = stored["names"], stored["codes"].tolist()
        trained_ids = stored.get("node_ids") or [str(i) for i in range(len(codes))]
        by_id = dict(zip(trained_ids, (names[c] for c in codes)))
        if changed:
            log.warning("--allow-data-change: predicting on data that differ from the "
                        "checkpoint's (%s); each node's split is the one it trained with, "
                        "'none' for nodes the run did not have", ", ".join(changed))
        return [by_id.get(str(i), "none") for i in ids]

    def _forward(self, graphs: list[Data], where: list[int], status: list[str]
                 ) -> list[Tensor | None]:
        """Model outputs ``[out_dim]`` per graph (on the CPU): one batch, or graph by graph
        when the batch fails (a model's own input check), so an error costs only its row."""
        if not graphs:
            return []
        if len(graphs) > 1:
            try:
                return list(self._outputs(graphs))
            except (ValueError, RuntimeError, IndexError):
                pass  # found below, graph by graph
        outs: list[Tensor | None] = []
        for i, g in zip(where, graphs):
            try:
                outs.append(self._outputs([g])[0])
            except (ValueError, RuntimeError, IndexError) as err:
                status[i] = _reason(err)
                outs.append(None)
        return outs

    def _outputs(self, graphs: list[Data]) -> Tensor:
        from ..training.module import split_output
        device = next((p.device for p in self.model.parameters()), torch.device("cpu"))
        batch = Batch.from_data_list(graphs).to(device)
        out = split_output(self.model(batch))[0]
        out = out.to(torch.promote_types(out.dtype, torch.float32))
        return out.reshape(len(graphs), self.spec.out_dim).cpu()

    def _collect(self, outputs: list[Tensor | None], status: list[str],
                 items: Sequence[Any]) -> Predictions:
        n, dim = len(outputs), self.spec.out_dim
        dtype = next((o.dtype for o in outputs if o is not None), torch.float32)
        raw = torch.full((n, dim), float("nan"), dtype=dtype)
        ok = [i for i, o in enumerate(outputs) if o is not None]
        if ok:
            raw[ok] = torch.stack([outputs[i] for i in ok])
        classes = None
        if self.spec.task == "classification":
            values = torch.softmax(raw, dim=-1)
            classes = torch.full((n,), -1, dtype=torch.long)
            if ok:
                classes[ok] = raw[ok].argmax(-1)
        elif self.spec.task == "binary":
            values = torch.sigmoid(raw)
        else:
            values = raw
        inputs = None
        if any(isinstance(x, str) for x in items):
            inputs = tuple(x if isinstance(x, str) else None for x in items)
        return Predictions(self.spec.task, self.columns, values, tuple(status), classes, inputs)


def _as_list(inputs: Any) -> list:
    if isinstance(inputs, (str, Data)):
        return [inputs]
    if hasattr(inputs, "__len__") and hasattr(inputs, "__getitem__") and \
            not isinstance(inputs, (list, tuple)):
        return [inputs[i] for i in range(len(inputs))]  # a PyG Dataset
    return list(inputs)


def load_run(run_dir: str | Path, checkpoint: str = "best", data_dir: str | None = None,
             dataset: Any = None, allow_data_change: bool = False) -> TrainedRun:
    """Loads a trained run for prediction: its ``config.yaml`` and the model weights of
    ``checkpoints/<checkpoint>.ckpt`` (read with ``weights_only=True``), on the CPU.

    Args:
        run_dir: a run directory (one seed: ``seed_<s>/`` of a multi-seed run).
        checkpoint: ``"best"`` (best validation epoch) or ``"last"``.
        data_dir: raw-data directory, for datasets whose description is read from the data
            (``tu:<NAME>``); molecule and registered datasets need none.
        dataset: the in-memory graphs a run of ``graph_transformers.train(config,
            dataset=graphs)`` trained on (``data.name: graph_list``), from which its task and
            feature vocabularies are read again (and, for a run on one graph, whose nodes
            :meth:`TrainedRun.predict_nodes` predicts).
        allow_data_change: let :meth:`TrainedRun.predict_nodes` use data that differ from
            the checkpoint's (``--allow-data-change``, as ``evaluate``).

    Raises:
        RunError: ``run_dir`` is not a run directory or has no such checkpoint, or its
            ``config.yaml`` changes the data keys the checkpoint was trained with.
        CheckpointError: the checkpoint cannot be read, does not fit the config, or was
            written by another run.

    Example::

        >>> import graph_transformers as gt
        >>> run = gt.load_run("runs/esol-gt-lappe")  # doctest: +SKIP
        >>> run.predict(["CCO"]).rows()  # doctest: +SKIP
        [{'index': 0, 'smiles': 'CCO', 'status': 'ok', 'logSolubility': ...}]
    """
    from ..training.trained import load_bound_model
    config, spec, model, binding = load_bound_model(run_dir, data_dir, checkpoint, dataset)
    run = TrainedRun(config, spec, model, run_dir=run_dir, checkpoint=checkpoint)
    run._dataset = dataset
    run.binding, run.allow_data_change = binding, allow_data_change
    return run
