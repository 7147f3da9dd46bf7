"""Adapters: the official EGT, GRPE, GraphGPS and GRIT models, imported from a local checkout,
wrapped so that they take the library's PyG ZINC batches and return what the library's training
module expects (a prediction ``[num_graphs, 1]``, or a ``ModelOutput(prediction, aux_loss)``).

Nothing of the official code is copied here: each ``build_official_*`` imports the official
module files from ``--official PATH`` (see :func:`import_official`), and the wrapper only
converts the batch to the official input format and, where the official repository has no ZINC
model (EGT: its HEAD holds the PCQM4M/OGB molecule model only; GraphGPS: its model is assembled by
GraphGym from a global config), adds the ZINC input and output blocks described below and in
``README.md``.

* EGT (``shamim-hussain/egt_pytorch``, ``lib/models/egt.py`` + ``egt_layers.py``): the official
  ``EGT`` class (its ``EGT_Layer`` stack, ``node_ended=edge_ended=True`` so every layer updates
  both channels) with a ZINC input block modelled on the official ``EGT_MOL``: atom-type
  embedding (``padding_idx=0`` for padding), ``Linear(2r, d_h)`` of the SVD encodings (random
  sign flip of each singular-vector pair per graph in training, as the official data pipeline),
  edge channels = embedding of the adjacency with self-loops + bond-type embedding
  (``padding_idx=0`` = no bond), the official additive mask ``(m_i m_j - 1) · 1e9``; output as
  ``EGT_MOL``: final LayerNorm, masked mean over nodes, MLP ``d_h → d_h/2 → d_h/4 → 1`` with the
  official activation (ELU). The distance-prediction objective (not in the official HEAD) is added
  on LayerNorm-ed output edge channels with the official reduction: cross-entropy summed over the
  pairs within ``ν`` hops of each graph, averaged over graphs, times ``κ``.
* GRPE (``lenscloth/GRPE``, ``grpe/model/graph_self_attention.py``): the official
  ``GRPENetwork`` unchanged; the adapter builds the input of the official ``MoleculeCollator``:
  ``x [B, N, 1]`` = atom type + 1 (``convert_to_single_emb``), ``-1`` at padding; ``mask [B, N]``
  ``True`` at padding; ``distance [B, N, N]`` (the library's cached shortest paths: exact hops
  ``0 … L`` kept, longer paths → ``L`` as the official ``clamp(max=max_hop)`` does,
  unreachable and padding → ``-1``); ``edge_attr [B, N, N]`` bond type where an edge exists,
  ``-1`` elsewhere.
* GPS (``rampasek/GraphGPS``, ``graphgps/layer/gps_layer.py``): the official ``GPSLayer`` file is
  executed verbatim; importing GraphGPS's package would pull GraphGym's global config (``yacs``),
  ``torch_scatter`` and ``performer_pytorch``, so :func:`import_gps_layer` gives the file three
  stub sibling modules (BigBird, GatedGCN, GINE-ESLapPE layers) and a stub ``performer_pytorch``
  whose classes raise if constructed (GINE+Transformer uses none of them), and registers GraphGym's
  ``relu`` activation if GraphGym has not. The encoder and head that GraphGym would assemble are
  written here as the official ``FeatureEncoder`` with ``TypeDictNode+RWSE`` / ``TypeDictEdge``
  (``Embedding(28, 64 - 28)`` ‖ ``Linear(BatchNorm1d(20)(RWSE), 28)``; ``Embedding(4, 64)``) and
  ``SANGraphHead`` (sum pooling, ``64 → 32 → 16 → 1`` with ReLU).
* GRIT (``LiamMa/GRIT``, ``grit/layer/grit_layer.py`` + ``grit/encoder/rrwp_encoder.py``): the
  two official files are executed verbatim by :func:`import_grit`, which gives them, for the
  duration of the import only, ``grit`` / ``grit.layer`` / ``grit.encoder`` as empty namespace
  packages over the checkout, a stub ``grit.utils`` (its ``negate_edge_index`` is imported and
  never called), and stand-ins for the packages that are not installed: ``torch_scatter``
  (``scatter`` / ``scatter_add`` / ``scatter_max``), ``torch_sparse`` (``coalesce``),
  ``opt_einsum`` (``contract``) with torch's own operations, and ``yacs`` (``CfgNode``, only a
  default argument); it registers GraphGym's ``relu`` activation if GraphGym has not, and leaves
  ``sys.modules`` and GraphGym's registries as it found them. :class:`OfficialGRITZinc`
  assembles what GraphGym builds from ``configs/GRIT/zinc-GRIT-RRWP.yaml`` (``GritTransformer``
  in ``grit/network/grit_model.py``): ``TypeDictNode`` / ``TypeDictEdge`` embeddings, the
  official ``RRWPLinearNodeEncoder`` and ``RRWPLinearEdgeEncoder`` (edge embedding + self-loops +
  RRWP pairs coalesced, padded to all pairs), the official ``GritTransformerLayer`` stack with
  the ``cfg.gt`` node of that config (:func:`grit_gt_config`), and ``SANGraphHead`` (add pooling,
  ``64 → 32 → 16 → 1``, ReLU). The library's cached RRWP (``rrwp [n, K]``, every pair in
  ``rrwp_pair [n², K]``) is converted to the official transform's fields: ``rrwp``, the pairs with
  a nonzero value as ``rrwp_index = [key j, query i]`` / ``rrwp_val``, and ``log_deg``.
"""
from __future__ import annotations

import hashlib
import importlib
import importlib.util
import subprocess
import sys
import types
from pathlib import Path
from types import SimpleNamespace

import torch
import torch.nn.functional as F
from torch import Tensor, nn
from torch_geometric.utils import to_dense_batch

from graph_transformers.core.dense import DenseBatch
from graph_transformers.encodings.svd import random_svd_sign_flip
from graph_transformers.models.egt import ModelOutput


class OfficialCodeError(RuntimeError):
    """The official checkout is missing, incomplete or not importable."""


#: what each model needs from its official checkout: repository, files, and how to get them
OFFICIAL = {
    "egt": dict(repo="shamim-hussain/egt_pytorch",
                files=("lib/models/egt.py", "lib/models/egt_layers.py"),
                env="GT_PARITY_EGT"),
    "grpe": dict(repo="lenscloth/GRPE", files=("grpe/model/graph_self_attention.py",),
                 env="GT_PARITY_GRPE"),
    "gps": dict(repo="rampasek/GraphGPS", files=("graphgps/layer/gps_layer.py",),
                env="GT_PARITY_GPS"),
    "grit": dict(repo="LiamMa/GRIT",
                 files=("grit/layer/grit_layer.py", "grit/encoder/rrwp_encoder.py"),
                 env="GT_PARITY_GRIT"),
}


def check_checkout(model: str, path: str | Path | None) -> Path:
    """The official checkout of ``model`` at ``path``, checked for the files the adapter imports.

    Raises:
        OfficialCodeError: naming the repository and the missing path or files.
    """
    info = OFFICIAL[model]
    how = (f"clone https://github.com/{info['repo']} outside this repository and pass its path "
           f"with --official PATH (or set ${info['env']}); see benchmarks/parity/README.md")
    if path is None:
        raise OfficialCodeError(f"{model}: no official checkout given; {how}")
    root = Path(path).expanduser()
    missing = [f for f in info["files"] if not (root / f).is_file()]
    if missing:
        raise OfficialCodeError(f"{model}: {root} is not a checkout of {info['repo']} (missing "
                                f"{', '.join(missing)}); {how}")
    return root


def official_commit(path: str | Path) -> str:
    """``git rev-parse HEAD`` of the checkout, or the ``COMMIT`` file an exported archive may
    carry (``git archive`` drops ``.git``), else ``"unknown"``."""
    root = Path(path)
    try:
        out = subprocess.run(["git", "-C", str(root), "rev-parse", "HEAD"], capture_output=True,
                             text=True, timeout=10)
        if out.returncode == 0 and out.stdout.strip():
            return out.stdout.strip()
    except (OSError, subprocess.SubprocessError):
        pass
    marker = root / "COMMIT"
    if marker.is_file():
        return marker.read_text().strip()
    return "unknown"


def _package(name: str, directory: Path) -> types.ModuleType:
    """A namespace package ``name`` over ``directory`` (its ``__init__.py``, if any, is not run:
    the official packages' ``__init__`` import data loaders and training code the model does not
    need)."""
    if name in sys.modules:
        return sys.modules[name]
    pkg = types.ModuleType(name)
    pkg.__path__ = [str(directory)]
    sys.modules[name] = pkg
    return pkg


def import_official(alias: str, directory: Path, module: str) -> types.ModuleType:
    """Imports ``directory/module.py`` as ``<alias>_<hash of directory>.module`` (relative imports
    between the official files work; nothing is added to ``sys.path``; two checkouts in one
    process do not share a module)."""
    resolved = Path(directory).resolve()
    alias = f"{alias}_{hashlib.sha1(str(resolved).encode()).hexdigest()[:12]}"
    _package(alias, resolved)
    try:
        return importlib.import_module(f"{alias}.{module}")
    except ImportError as err:
        raise OfficialCodeError(f"cannot import {directory / (module + '.py')}: {err}") from err


# ----------------------------------------------------------------------------------- EGT
def build_official_egt(path: Path, *, hidden_dim: int, edge_hidden_dim: int, num_layers: int,
                       num_heads: int, num_node_types: int, num_edge_types: int, pe_dim: int,
                       distance_objective: bool, distance_hops: int, distance_weight: float,
                       node_ffn_multiplier: float = 2.0, edge_ffn_multiplier: float = 2.0,
                       attn_dropout: float = 0.0, dropout: float = 0.0, clamp: float = 5.0,
                       mlp_layers: int = 2) -> nn.Module:
    """The official ``EGT`` (``lib/models/egt.py``) with the ZINC blocks of the module docstring."""
    egt = import_official("_parity_official_egt", path / "lib" / "models", "egt")

    class OfficialEGTZinc(egt.EGT):
        """Official EGT layers; ZINC input/output blocks after the official ``EGT_MOL``."""

        def __init__(self) -> None:
            super().__init__(node_width=hidden_dim, edge_width=edge_hidden_dim,
                             num_heads=num_heads, model_height=num_layers,
                             node_mha_dropout=dropout, node_ffn_dropout=dropout,
                             edge_mha_dropout=dropout, edge_ffn_dropout=dropout,
                             attn_dropout=attn_dropout, activation="elu",
                             clip_logits_value=[-clamp, clamp],
                             node_ffn_multiplier=node_ffn_multiplier,
                             edge_ffn_multiplier=edge_ffn_multiplier, scale_dot=True,
                             scale_degree=False, node_ended=True, edge_ended=True)
            self.nodef_embed = nn.Embedding(num_node_types + 1, hidden_dim, padding_idx=0)
            self.svd_embed = nn.Linear(pe_dim, hidden_dim) if pe_dim else None
            self.adj_embed = nn.Embedding(2, edge_hidden_dim)
            self.featm_embed = nn.Embedding(num_edge_types + 1, edge_hidden_dim, padding_idx=0)
            self.final_ln_h = nn.LayerNorm(hidden_dim)
            dims = [hidden_dim] + [hidden_dim // 2 ** (k + 1) for k in range(mlp_layers)] + [1]
            self.mlp_layers = nn.ModuleList(nn.Linear(a, b) for a, b in zip(dims, dims[1:]))
            self.mlp_fn = getattr(F, self.activation)
            if distance_objective:
                self.final_ln_e = nn.LayerNorm(edge_hidden_dim)
                ddims = ([edge_hidden_dim]
                         + [edge_hidden_dim // 2 ** (k + 1) for k in range(mlp_layers)]
                         + [distance_hops + 1])
                self.dist_layers = nn.ModuleList(nn.Linear(a, b) for a, b in zip(ddims, ddims[1:]))

        def _mlp(self, layers: nn.ModuleList, h: Tensor) -> Tensor:
            h = layers[0](h)
            for layer in layers[1:]:
                h = layer(self.mlp_fn(h))
            return h

        def forward(self, data):
            dense = DenseBatch.from_batch(data)
            nodem = dense.mask
            x = data.x.view(data.x.size(0), -1)[:, 0].long() + 1
            h = self.nodef_embed(dense.to_dense(x, fill=0))
            if self.svd_embed is not None:
                pe = data.svd_pe
                if self.training:   # the official pipeline flips each (u_k, v_k) per graph
                    pe = random_svd_sign_flip(pe, dense.batch, per_graph=True)
                h = h + dense.to_dense(self.svd_embed(pe))
            adj = dense.adjacency(self_loops=True).long()
            bonds = dense.scatter_edges(data.edge_attr.view(-1).long() + 1, fill=0)
            e = self.adj_embed(adj) + self.featm_embed(bonds)
            g = egt.Graph()
            g.h, g.e = h, e
            g.node_mask = nodem
            nm = nodem.float()
            g.mask = (nm[:, :, None, None] * nm[:, None, :, None] - 1) * 1e9
            for layer in self.EGT_layers:
                g = layer(g)
            hf = self.final_ln_h(g.h)
            m = nm.unsqueeze(-1)
            pooled = (hf * m).sum(dim=1) / (m.sum(dim=1) + 1e-9)
            out = self._mlp(self.mlp_layers, pooled)
            if not distance_objective:
                return out
            target = dense.shortest_paths(max_hops=distance_hops)
            valid = (target >= 0) & (target <= distance_hops)
            logits = self._mlp(self.dist_layers, self.final_ln_e(g.e)[valid])
            ce = F.cross_entropy(logits, target[valid], reduction="sum") / target.size(0)
            return ModelOutput(out, distance_weight * ce)

    return OfficialEGTZinc()


# ----------------------------------------------------------------------------------- GRPE
class GRPEAdapter(nn.Module):
    """The official ``GRPENetwork`` fed with the official ``MoleculeCollator``'s format (module
    docstring), built from the library's cached ``spd`` / ``pair_edge``."""

    def __init__(self, network: nn.Module, max_distance: int) -> None:
        super().__init__()
        self.network = network
        self.max_distance = max_distance

    @staticmethod
    def official_inputs(data, max_distance: int) -> SimpleNamespace:
        """The official collator's fields from a library batch (see the module docstring)."""
        dense = DenseBatch.from_batch(data)
        x = data.x.view(data.x.size(0), -1).long() + 1               # convert_to_single_emb
        xd, real = to_dense_batch(x, dense.batch, fill_value=-1,
                                  max_num_nodes=dense.max_num_nodes)
        spd = dense.place_pairs(data.spd.long(), fill=-1)            # 0…L, L+1 far, L+2 unreach.
        distance = torch.where(spd > max_distance + 1, torch.full_like(spd, -1), spd)
        distance = torch.where(distance == max_distance + 1,
                               torch.full_like(distance, max_distance), distance)
        pair = data.pair_edge.long()
        pair = pair[:, 0] if pair.dim() == 2 else pair
        edge = dense.place_pairs(torch.where(pair < 0, torch.full_like(pair, -1), pair), fill=-1)
        return SimpleNamespace(x=xd, mask=~real, distance=distance, edge_attr=edge, y=data.y)

    def forward(self, data) -> Tensor:
        return self.network(self.official_inputs(data, self.max_distance))


def build_official_grpe(path: Path, *, hidden_dim: int, num_layers: int, num_heads: int,
                        ffn_dim: int, dropout: float, attn_dropout: float, max_distance: int,
                        num_node_types: int, num_edge_types: int, input_noise: float,
                        share_encodings: bool, mlp_layers: int) -> nn.Module:
    """The official ``GRPENetwork`` with the arguments of the official ``zinc.py``, sized as the
    library's config (``num_node_type`` = atom types + 1 for the collator's ``+1`` offset)."""
    mod = import_official("_parity_official_grpe", path / "grpe" / "model",
                          "graph_self_attention")
    net = mod.GRPENetwork(num_task=1, num_layer=num_layers, d_model=hidden_dim, nhead=num_heads,
                          dim_feedforward=ffn_dim, dropout=dropout,
                          attention_dropout=attn_dropout, max_hop=max_distance,
                          num_node_type=num_node_types + 1, num_edge_type=num_edge_types,
                          use_independent_token=not share_encodings, perturb_noise=input_noise,
                          num_last_mlp=mlp_layers)
    return GRPEAdapter(net, max_distance)


# ----------------------------------------------------------------------------------- GPS
class _Unavailable:
    """Stands in for an official class the GINE+Transformer layer never constructs."""

    what = "this class"

    def __init__(self, *args, **kwargs) -> None:
        raise OfficialCodeError(f"{self.what} is stubbed by the parity harness (GraphGPS's "
                                "GINE+Transformer layer does not use it)")


def _stub_module(name: str, **classes: str) -> types.ModuleType:
    mod = types.ModuleType(name)
    for cls_name, what in classes.items():
        setattr(mod, cls_name, type(cls_name, (_Unavailable,), {"what": what}))
    return mod


def import_gps_layer(path: Path) -> type:
    """The official ``GPSLayer`` class, ``graphgps/layer/gps_layer.py`` executed verbatim with
    the smallest shim (module docstring): the package ``graphgps`` and ``graphgps.layer`` as
    empty namespaces over the checkout, stub modules for the three sibling layers and
    ``performer_pytorch``, GraphGym's ``relu`` registered if missing."""
    name = "graphgps.layer.gps_layer"
    if name in sys.modules and getattr(sys.modules[name], "__file__", None) == str(
            path / "graphgps" / "layer" / "gps_layer.py"):
        return sys.modules[name].GPSLayer
    import torch_geometric.graphgym.register as register
    register.act_dict.setdefault("relu", nn.ReLU)
    for pkg, directory in (("graphgps", path / "graphgps"),
                           ("graphgps.layer", path / "graphgps" / "layer")):
        _package(pkg, directory).__path__ = [str(directory)]
    stubs = {
        "graphgps.layer.bigbird_layer": dict(SingleBigBirdLayer="BigBird"),
        "graphgps.layer.gatedgcn_layer": dict(GatedGCNLayer="GatedGCN"),
        "graphgps.layer.gine_conv_layer": dict(GINEConvESLapPE="GINE with EquivStableLapPE"),
    }
    for mod_name, classes in stubs.items():
        sys.modules.setdefault(mod_name, _stub_module(mod_name, **classes))
    if importlib.util.find_spec("performer_pytorch") is None:
        sys.modules.setdefault("performer_pytorch",
                               _stub_module("performer_pytorch", SelfAttention="Performer"))
    spec = importlib.util.spec_from_file_location(name, path / "graphgps" / "layer" /
                                                  "gps_layer.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    try:
        spec.loader.exec_module(module)
    except ImportError as err:
        del sys.modules[name]
        raise OfficialCodeError(f"cannot import GraphGPS's gps_layer.py: {err}") from err
    return module.GPSLayer


class OfficialGPSZinc(nn.Module):
    """GraphGPS's ``GPSModel`` for ``zinc-GPS+RWSE.yaml``: the official ``GPSLayer`` stack between
    the encoder and head that GraphGym would build (module docstring)."""

    def __init__(self, gps_layer: type, *, hidden_dim: int, num_layers: int, num_heads: int,
                 num_node_types: int, num_edge_types: int, walk_length: int, pe_embed_dim: int,
                 dropout: float, attn_dropout: float, mlp_layers: int) -> None:
        super().__init__()
        # FeatureEncoder: TypeDictNode (dim_emb - dim_pe) ‖ RWSE (BatchNorm raw, Linear → dim_pe)
        self.node_encoder = nn.Embedding(num_node_types, hidden_dim - pe_embed_dim)
        self.rwse_raw_norm = nn.BatchNorm1d(walk_length)
        self.rwse_encoder = nn.Linear(walk_length, pe_embed_dim)
        self.edge_encoder = nn.Embedding(num_edge_types, hidden_dim)        # TypeDictEdge
        self.layers = nn.ModuleList(
            gps_layer(dim_h=hidden_dim, local_gnn_type="GINE", global_model_type="Transformer",
                      num_heads=num_heads, act="relu", dropout=dropout,
                      attn_dropout=attn_dropout, layer_norm=False, batch_norm=True)
            for _ in range(num_layers))
        # SANGraphHead(dim_in, dim_out=1, L=mlp_layers): add pooling, halving widths, ReLU
        self.head = nn.ModuleList(nn.Linear(hidden_dim // 2 ** k, hidden_dim // 2 ** (k + 1))
                                  for k in range(mlp_layers))
        self.head.append(nn.Linear(hidden_dim // 2 ** mlp_layers, 1))

    def forward(self, data) -> Tensor:
        from torch_geometric.nn import global_add_pool
        x = self.node_encoder(data.x.view(data.x.size(0), -1)[:, 0].long())
        pe = self.rwse_encoder(self.rwse_raw_norm(data.rwse))
        batch = SimpleNamespace(x=torch.cat([x, pe], dim=1), edge_index=data.edge_index,
                                edge_attr=self.edge_encoder(data.edge_attr.view(-1).long()),
                                batch=data.batch)
        for layer in self.layers:
            batch = layer(batch)
        g = global_add_pool(batch.x, data.batch, size=data.num_graphs)
        for lin in self.head[:-1]:
            g = F.relu(lin(g))
        return self.head[-1](g)


def build_official_gps(path: Path, **kwargs) -> nn.Module:
    """:class:`OfficialGPSZinc` around the official ``GPSLayer`` of the checkout at ``path``."""
    return OfficialGPSZinc(import_gps_layer(path), **kwargs)


# ----------------------------------------------------------------------------------- GRIT
class _CfgNode(dict):
    """A dict with attribute access: what the official GRIT layer reads from its ``cfg``
    argument (``cfg.attn.get(...)``, ``cfg.bn_momentum``), and the stand-in for ``yacs``'s
    ``CfgNode`` where ``yacs`` is not installed (``grit_layer.py`` only uses it as the default
    value of an argument)."""

    def __getattr__(self, key: str):
        try:
            return self[key]
        except KeyError:
            raise AttributeError(key) from None

    def __setattr__(self, key: str, value) -> None:
        self[key] = value


def _scatter_size(src: Tensor, index: Tensor, dim: int, dim_size: int | None) -> list[int]:
    size = list(src.size())
    size[dim] = dim_size if dim_size is not None else (int(index.max()) + 1 if index.numel()
                                                       else 0)
    return size


def _broadcast_index(index: Tensor, src: Tensor, dim: int) -> Tensor:
    """``torch_scatter``'s broadcasting of a 1-D ``index`` along ``dim`` of ``src``."""
    if index.dim() == 1:
        index = index.view([1] * dim + [-1] + [1] * (src.dim() - dim - 1))
    return index.expand_as(src)


def _scatter_add(src: Tensor, index: Tensor, dim: int = -1, out: Tensor | None = None,
                 dim_size: int | None = None) -> Tensor:
    """``torch_scatter.scatter_add`` (and ``scatter(reduce="sum" | "add")``): into ``out`` in
    place when given, else into zeros of ``dim_size`` (default ``index.max() + 1``) rows."""
    dim = dim % src.dim()
    if out is None:
        out = src.new_zeros(_scatter_size(src, index, dim, dim_size))
    return out.scatter_add_(dim, _broadcast_index(index, src, dim), src)


def _scatter_max(src: Tensor, index: Tensor, dim: int = -1, out: Tensor | None = None,
                 dim_size: int | None = None) -> tuple[Tensor, None]:
    """``torch_scatter.scatter_max``'s values (0 for empty groups, as ``torch_scatter``); the
    argmax is not computed (``None``: GRIT's ``pyg_softmax`` reads the values only)."""
    dim = dim % src.dim()
    include_self = out is not None
    if out is None:
        out = src.new_zeros(_scatter_size(src, index, dim, dim_size))
    out = out.scatter_reduce_(dim, _broadcast_index(index, src, dim), src, "amax",
                              include_self=include_self)
    return out, None


def _scatter(src: Tensor, index: Tensor, dim: int = -1, out: Tensor | None = None,
             dim_size: int | None = None, reduce: str = "sum") -> Tensor:
    """``torch_scatter.scatter`` for the reductions GRIT's two files use (sum / add, max)."""
    if reduce in ("sum", "add"):
        return _scatter_add(src, index, dim, out, dim_size)
    if reduce == "max":
        return _scatter_max(src, index, dim, out, dim_size)[0]
    raise NotImplementedError(f"the parity harness's torch_scatter stand-in has no reduce="
                              f"{reduce!r} (GRIT's layer and RRWP encoder use sum and max)")


def _coalesce(index: Tensor, value: Tensor | None, m: int, n: int, op: str = "add"):
    """``torch_sparse.coalesce``: entries sorted by (row, column), duplicates reduced by ``op``
    (:func:`torch_geometric.utils.coalesce`, the same row-major order)."""
    from torch_geometric.utils import coalesce
    reduce = "sum" if op == "add" else op
    if value is None:
        return coalesce(index, None, max(m, n), reduce=reduce), None
    return coalesce(index, value, max(m, n), reduce=reduce)


def _contract(equation: str, *operands: Tensor, backend: str | None = None, **_) -> Tensor:
    """``opt_einsum.contract`` with two operands, as GRIT calls it (``backend="torch"``)."""
    return torch.einsum(equation, *operands)


def grit_dependency_shims() -> dict[str, types.ModuleType]:
    """Stand-ins for the packages ``grit_layer.py`` / ``rrwp_encoder.py`` import that are not
    installed here (each is used only where it is installed: ``importlib.util.find_spec``):
    ``torch_scatter``, ``torch_sparse``, ``opt_einsum``, ``yacs`` / ``yacs.config``. The
    functions compute what the packages compute, with torch's own operations (module
    docstring); they are put in ``sys.modules`` only while the official files are imported."""
    shims: dict[str, types.ModuleType] = {}

    def module(name: str, **attrs) -> None:
        if importlib.util.find_spec(name.split(".")[0]) is not None:
            return
        mod = types.ModuleType(name)
        mod.__doc__ = "stand-in of the parity harness (benchmarks/parity/adapters.py)"
        for key, value in attrs.items():
            setattr(mod, key, value)
        shims[name] = mod

    module("torch_scatter", scatter=_scatter, scatter_add=_scatter_add,
           scatter_max=_scatter_max)
    module("torch_sparse", coalesce=_coalesce,
           SparseTensor=type("SparseTensor", (_Unavailable,), {"what": "torch_sparse's "
                                                               "SparseTensor"}))
    module("opt_einsum", contract=_contract)
    module("yacs")
    module("yacs.config", CfgNode=_CfgNode)
    if "yacs.config" in shims and "yacs" in shims:
        shims["yacs"].config = shims["yacs.config"]
    return shims


#: the checkouts imported so far (resolved path → namespace of the two official modules)
_GRIT_IMPORTED: dict[str, SimpleNamespace] = {}

#: the official modules, by the name they are imported under (their own package path)
_GRIT_MODULES = {"grit.layer.grit_layer": "grit/layer/grit_layer.py",
                 "grit.encoder.rrwp_encoder": "grit/encoder/rrwp_encoder.py"}


def import_grit(path: Path) -> SimpleNamespace:
    """The official ``grit/layer/grit_layer.py`` and ``grit/encoder/rrwp_encoder.py`` of the
    checkout at ``path``, executed verbatim under their own module names, as
    ``SimpleNamespace(grit_layer=..., rrwp_encoder=...)``.

    The shim (module docstring) is in place for the import only: ``sys.modules`` gets back the
    entries it had, and GraphGym's layer and encoder registries lose the classes the files
    register (``GritTransformer``, ``rrwp_linear``, …), so that the import can be repeated (e.g.
    for another checkout). GraphGym's ``relu`` activation stays registered (as for GPS), since
    the layers look it up when they are built.

    Raises:
        OfficialCodeError: a file cannot be imported (a missing dependency the shim does not
            stand in for, or a registry name already taken).
    """
    root = Path(path).resolve()
    if str(root) in _GRIT_IMPORTED:
        return _GRIT_IMPORTED[str(root)]
    import torch_geometric.graphgym.register as register
    register.act_dict.setdefault("relu", nn.ReLU)
    shims: dict[str, types.ModuleType] = {}
    for name in ("grit", "grit.layer", "grit.encoder"):
        pkg = types.ModuleType(name)
        pkg.__path__ = [str(root / name.replace(".", "/"))]
        shims[name] = pkg
    shims["grit.utils"] = types.ModuleType("grit.utils")
    shims["grit.utils"].negate_edge_index = _stub_function(
        "grit.utils.negate_edge_index (imported by grit_layer.py, never called)")
    shims.update(grit_dependency_shims())
    registries = (register.layer_dict, register.node_encoder_dict, register.edge_encoder_dict)
    before = [dict(r) for r in registries]
    saved = {name: sys.modules.get(name) for name in (*shims, *_GRIT_MODULES)}
    loaded = {}
    try:
        sys.modules.update(shims)
        for name, rel in _GRIT_MODULES.items():
            spec = importlib.util.spec_from_file_location(name, root / rel)
            mod = importlib.util.module_from_spec(spec)
            sys.modules[name] = mod
            spec.loader.exec_module(mod)
            loaded[name.rsplit(".", 1)[1]] = mod
    except (ImportError, KeyError) as err:
        raise OfficialCodeError(f"cannot import GRIT's {rel}: {err!r}") from err
    finally:
        for name, old in saved.items():
            if old is None:
                sys.modules.pop(name, None)
            else:
                sys.modules[name] = old
        for registry, old in zip(registries, before):
            registry.clear()
            registry.update(old)
    _GRIT_IMPORTED[str(root)] = SimpleNamespace(**loaded)
    return _GRIT_IMPORTED[str(root)]


def _stub_function(what: str):
    def stub(*args, **kwargs):
        raise OfficialCodeError(f"{what} is stubbed by the parity harness")
    return stub


def grit_gt_config(*, dropout: float, attn_dropout: float, clamp: float | None,
                   deg_scaler: bool, edge_update: bool, full_attention: bool,
                   norm: str) -> _CfgNode:
    """The official ``cfg.gt`` node that ``GritTransformerLayer`` reads: the defaults of
    ``grit/config/gt_config.py`` with the values of ``configs/GRIT/zinc-GRIT-RRWP.yaml`` (ZINC:
    dropout 0, attention dropout 0.2, clamp 5, ReLU, BatchNorm, ``bn_momentum`` 0.1,
    ``update_e``, ``full_attn``, ``edge_enhance``, ``O_e``, ``norm_e``, ``deg_scaler``), the
    values our config can change taken from it.

    Raises:
        ValueError: for a ``norm`` other than ``batch``, ``layer``, ``none``.
    """
    if norm not in ("batch", "layer", "none"):
        raise ValueError(f"GRIT norm must be 'batch', 'layer' or 'none', got {norm!r}")
    attn = _CfgNode(use=True, sparse=False, deg_scaler=deg_scaler, use_bias=False, clamp=clamp,
                    act="relu", full_attn=full_attention, norm_e=True, O_e=True,
                    edge_enhance=True, fwl=False)
    return _CfgNode(layer_type="GritTransformer", dropout=dropout, attn_dropout=attn_dropout,
                    layer_norm=norm == "layer", batch_norm=norm == "batch", bn_momentum=0.1,
                    bn_no_runner=False, residual=True, update_e=edge_update, attn=attn)


class _TypeDictNode(nn.Module):
    """GRIT's ``TypeDictNodeEncoder`` (``grit/encoder/type_dict_encoder.py``): an embedding of
    the first node-feature column (its number of types read from GraphGym's global config)."""

    def __init__(self, num_types: int, dim: int) -> None:
        super().__init__()
        self.encoder = nn.Embedding(num_types, dim)

    def forward(self, batch):
        batch.x = self.encoder(batch.x[:, 0])
        return batch


class _TypeDictEdge(nn.Module):
    """GRIT's ``TypeDictEdgeEncoder``: an embedding of the bond type."""

    def __init__(self, num_types: int, dim: int) -> None:
        super().__init__()
        self.encoder = nn.Embedding(num_types, dim)

    def forward(self, batch):
        batch.edge_attr = self.encoder(batch.edge_attr)
        return batch


class _SANGraphHead(nn.Module):
    """GRIT's ``SANGraphHead`` (``grit/head/san_graph.py``, ``L = 2`` as GraphGym builds it):
    ``graph_pooling`` of the nodes, then ``D → D/2 → … → D/2^L`` with ReLU, and
    ``Linear(D/2^L, dim_out)``; returns the prediction only (the official returns it with the
    label)."""

    def __init__(self, dim_in: int, dim_out: int, L: int = 2, pooling: str = "add") -> None:
        super().__init__()
        from torch_geometric.nn import global_add_pool, global_max_pool, global_mean_pool
        pools = {"add": global_add_pool, "sum": global_add_pool, "mean": global_mean_pool,
                 "max": global_max_pool}
        if pooling not in pools:
            raise ValueError(f"graph pooling must be one of {sorted(pools)}, got {pooling!r}")
        self.pool = pools[pooling]
        self.FC_layers = nn.ModuleList(nn.Linear(dim_in // 2 ** k, dim_in // 2 ** (k + 1))
                                       for k in range(L))
        self.FC_layers.append(nn.Linear(dim_in // 2 ** L, dim_out))
        self.L = L

    def forward(self, batch) -> Tensor:
        g = self.pool(batch.x, batch.batch, size=batch.num_graphs)
        for k in range(self.L):
            g = F.relu(self.FC_layers[k](g))
        return self.FC_layers[self.L](g)


class OfficialGRITZinc(nn.Module):
    """GRIT's ``GritTransformer`` (``grit/network/grit_model.py``) as GraphGym builds it from
    ``configs/GRIT/zinc-GRIT-RRWP.yaml``, around the official encoder and layer classes (module
    docstring). The submodules have the official names, so the state dict has the official
    keys (``encoder.node_encoder.encoder.weight``, ``rrwp_abs_encoder.fc.weight``,
    ``layers.0.attention.Q.weight``, ``post_mp.FC_layers.0.weight``, …).

    Forward takes a library batch with the RRWP encodings (``encodings.rrwp``) and returns
    ``[num_graphs, 1]``.
    """

    def __init__(self, grit: SimpleNamespace, *, hidden_dim: int, num_layers: int,
                 num_heads: int, num_node_types: int, num_edge_types: int, walk_length: int,
                 dropout: float = 0.0, attn_dropout: float = 0.2, clamp: float | None = 5.0,
                 deg_scaler: bool = True, edge_update: bool = True, full_attention: bool = True,
                 norm: str = "batch", readout: str = "sum", mlp_layers: int = 2) -> None:
        super().__init__()
        gt = grit_gt_config(dropout=dropout, attn_dropout=attn_dropout, clamp=clamp,
                            deg_scaler=deg_scaler, edge_update=edge_update,
                            full_attention=full_attention, norm=norm)
        self.walk_length = walk_length
        # in the official order of construction (FeatureEncoder, RRWP encoders, layers, head)
        self.encoder = nn.Module()                                        # FeatureEncoder
        self.encoder.node_encoder = _TypeDictNode(num_node_types, hidden_dim)
        self.encoder.edge_encoder = _TypeDictEdge(num_edge_types, hidden_dim)
        enc = grit.rrwp_encoder
        self.rrwp_abs_encoder = enc.RRWPLinearNodeEncoder(walk_length, hidden_dim)
        self.rrwp_rel_encoder = enc.RRWPLinearEdgeEncoder(
            walk_length, hidden_dim, pad_to_full_graph=full_attention,
            add_node_attr_as_self_loop=False, fill_value=0.0)
        self.layers = nn.Sequential(*(
            grit.grit_layer.GritTransformerLayer(
                in_dim=hidden_dim, out_dim=hidden_dim, num_heads=num_heads, dropout=dropout,
                act="relu", attn_dropout=attn_dropout, layer_norm=gt.layer_norm,
                batch_norm=gt.batch_norm, residual=True, norm_e=gt.attn.norm_e,
                O_e=gt.attn.O_e, cfg=gt)
            for _ in range(num_layers)))
        self.post_mp = _SANGraphHead(hidden_dim, 1, mlp_layers,
                                     "add" if readout == "sum" else readout)

    def official_inputs(self, data):
        """What the official ``add_full_rrwp`` transform and PyG's collation give a batch, from
        the library's batch: ``x [n, 1]`` atom types, ``edge_attr [E]`` bond types, ``rrwp
        [n, K]``, ``rrwp_index [2, P]`` = (key ``j``, query ``i``) of the pairs whose RRWP vector
        is not all zero (``SparseTensor.from_dense``'s support) with ``rrwp_val [P, K]``,
        ``log_deg = log(1 + out-degree)``, ``batch``; floats in the model's dtype.

        Raises:
            ValueError: the batch has no RRWP or another ``K``.
        """
        from torch_geometric.data import Data

        from graph_transformers.models.utils import full_graph_edge_index
        node, pair = getattr(data, "rrwp", None), getattr(data, "rrwp_pair", None)
        K = self.walk_length
        if node is None or pair is None or node.size(-1) != K or pair.size(-1) != K:
            raise ValueError(f"the official GRIT needs the RRWP encodings with walk_length {K} "
                             "(encodings.rrwp: rrwp [n, K], rrwp_pair [Σ n², K])")
        dtype = self.rrwp_abs_encoder.fc.weight.dtype
        n = data.num_nodes
        batch = getattr(data, "batch", None)
        if batch is None:
            batch = torch.zeros(n, dtype=torch.long, device=node.device)
        pairs = full_graph_edge_index(batch, self_loops=True)   # rrwp_pair's order: [j, i]
        keep = pair.abs().sum(-1) != 0
        edge_index = data.edge_index
        deg = torch.zeros(n, dtype=dtype, device=node.device).index_add_(
            0, edge_index[0], torch.ones(edge_index.size(1), dtype=dtype, device=node.device))
        return Data(x=data.x.view(n, -1)[:, :1].long(), edge_index=edge_index,
                    edge_attr=data.edge_attr.view(-1).long(), rrwp=node.to(dtype),
                    rrwp_index=pairs[:, keep], rrwp_val=pair[keep].to(dtype),
                    log_deg=torch.log(deg + 1), batch=batch, num_nodes=n,
                    num_graphs=int(data.num_graphs) if hasattr(data, "num_graphs") else 1)

    def forward(self, data) -> Tensor:
        batch = self.official_inputs(data)
        batch = self.encoder.node_encoder(batch)
        batch = self.encoder.edge_encoder(batch)
        batch = self.rrwp_abs_encoder(batch)
        batch = self.rrwp_rel_encoder(batch)
        batch = self.layers(batch)
        return self.post_mp(batch)


def build_official_grit(path: Path, **kwargs) -> nn.Module:
    """:class:`OfficialGRITZinc` around the official GRIT classes of the checkout at ``path``
    (keyword arguments: those of :class:`OfficialGRITZinc`)."""
    return OfficialGRITZinc(import_grit(path), **kwargs)
