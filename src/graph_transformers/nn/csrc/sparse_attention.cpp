// Fused CPU kernels of graph_transformers.nn.attention.sparse_attention (GT's neighbourhood
// attention, Dwivedi & Bresson eqs. 4-5, 9, 12): forward and backward, one pass over the
// incoming edges of each node, edges visited in CSR order (grouped by target node).
//
// For each edge e = (j -> i) and head h:
//     P[e,h,:] = (q[i,h,:] * scale) * k[j,h,:] * g[e,h,:]      (g = 1 without an edge gate)
//     s[e,h]   = sum_d P[e,h,d]
//     x[e,h]   = exp(clamp(s[e,h], -c, c))
//     w[e,h]   = x[e,h] / sum_{e' -> i} x[e',h]                 (0 / 1 for isolated targets)
//     o[i,h,:] = sum_{e -> i} w[e,h] * v[j,h,:]
//
// Backward, with go = dL/do and gP = dL/dP (the per-dimension scores feed GT's edge stream):
//     dL/dw[e,h] = go[i,h,:] . v[j,h,:]
//     dL/dx-part: softmax backward  dc[e,h] = w[e,h] * (go[i,h,:] . (v[j,h,:] - o[i,h,:]))
//     ds[e,h] = dc[e,h] where -c <= s[e,h] <= c (torch.clamp's subgradient), else 0
//     dP[e,h,d] = ds[e,h] + gP[e,h,d]
//     dq[i] += scale * dP * k[j] * g,   dk[j] += dP * q[i] * scale * g,
//     dg[e] = dP * q[i] * scale * k[j]
//     dv[j] += w[e,h] * go[i,h,:]
// Target-side sums (o, dq, and the per-edge dg) run per target node over the edges grouped by
// target; source-side sums (dk, dv) in a second pass per source node over the edges grouped by
// source. No atomics, no [num_edges, heads, head_dim] temporaries; deterministic.
// Python side: graph_transformers/nn/fused.py.
#include <ATen/ATen.h>
#include <ATen/Parallel.h>
#include <torch/library.h>

#include <algorithm>
#include <cmath>
#include <tuple>
#include <type_traits>
#include <vector>

namespace {

using at::Tensor;

// [N, H, D] tensors whose last two dims are packed (rows may be strided, e.g. unbind of a fused
// QKV projection); anything else is made contiguous.
Tensor packed_rows(const Tensor& t) {
  if (t.dim() == 3 && t.stride(2) == 1 && t.stride(1) == t.size(2)) return t;
  return t.contiguous();
}

struct Dims {
  int64_t N, H, D, E;
  int64_t q_row, k_row, v_row;  // row strides of q, k, v
};

void check_inputs(const Tensor& q, const Tensor& k, const Tensor& v, const c10::optional<Tensor>& gate,
                  const Tensor& src, const Tensor& perm, const Tensor& rowptr) {
  TORCH_CHECK(q.dim() == 3 && k.sizes() == q.sizes() && v.sizes() == q.sizes(),
              "sparse_attention: q, k, v must all be [num_nodes, num_heads, head_dim]");
  TORCH_CHECK(q.scalar_type() == k.scalar_type() && q.scalar_type() == v.scalar_type(),
              "sparse_attention: q, k, v must share one dtype");
  TORCH_CHECK(q.scalar_type() == at::kFloat || q.scalar_type() == at::kDouble,
              "sparse_attention (fused): float32 or float64 only");
  TORCH_CHECK(src.dim() == 1 && perm.sizes() == src.sizes(),
              "sparse_attention: src and perm must be [num_edges]");
  TORCH_CHECK(rowptr.dim() == 1 && rowptr.size(0) == q.size(0) + 1,
              "sparse_attention: rowptr must be [num_nodes + 1]");
  TORCH_CHECK(src.scalar_type() == at::kLong && perm.scalar_type() == at::kLong &&
                  rowptr.scalar_type() == at::kLong,
              "sparse_attention: src, perm and rowptr must be int64");
  if (gate.has_value()) {
    TORCH_CHECK(gate->dim() == 3 && gate->size(0) == src.size(0) && gate->size(1) == q.size(1) &&
                    gate->size(2) == q.size(2) && gate->scalar_type() == q.scalar_type(),
                "sparse_attention: edge_gate must be [num_edges, num_heads, head_dim] in q's dtype");
  }
}

// Edges grouped by node (a stable counting sort): perm [E], rowptr [num_nodes + 1]; raises for
// ids outside [0, num_nodes).
std::tuple<Tensor, Tensor> csr_index(const Tensor& index_in, int64_t num_nodes) {
  TORCH_CHECK(index_in.dim() == 1 && index_in.scalar_type() == at::kLong,
              "csr_index: index must be int64 [num_edges]");
  const Tensor index = index_in.contiguous();
  const int64_t E = index.size(0);
  const int64_t* idx = index.data_ptr<int64_t>();
  Tensor rowptr = at::zeros({num_nodes + 1}, index.options());
  Tensor perm = at::empty({E}, index.options());
  int64_t* rp = rowptr.data_ptr<int64_t>();
  int64_t* pm = perm.data_ptr<int64_t>();
  for (int64_t e = 0; e < E; ++e) {
    const int64_t i = idx[e];
    TORCH_CHECK(i >= 0 && i < num_nodes, "sparse_attention: edge_index holds node id ", i,
                ", outside [0, ", num_nodes, ")");
    ++rp[i + 1];
  }
  for (int64_t i = 0; i < num_nodes; ++i) rp[i + 1] += rp[i];
  std::vector<int64_t> next(rp, rp + num_nodes);
  for (int64_t e = 0; e < E; ++e) pm[next[idx[e]]++] = e;
  return {perm, rowptr};
}

// The loops run over all H * D channels of a node or edge at once (contiguous, so the compiler
// vectorizes them); per-head scalars are broadcast to their D channels first.
template <typename T>
inline void broadcast_heads(const T* __restrict__ per_head, int64_t H, int64_t D,
                            T* __restrict__ out) {
  for (int64_t h = 0; h < H; ++h) std::fill(out + h * D, out + (h + 1) * D, per_head[h]);
}

template <typename T>
inline void head_sums(const T* __restrict__ x, int64_t H, int64_t D, T* __restrict__ out) {
  for (int64_t h = 0; h < H; ++h) {
    T acc = 0;
    for (int64_t d = 0; d < D; ++d) acc += x[h * D + d];
    out[h] = acc;
  }
}

template <typename T, int64_t DC>
void forward_kernel(const T* __restrict__ q, const T* __restrict__ k, const T* __restrict__ v,
                    const T* __restrict__ g, const int64_t* src, const int64_t* perm,
                    const int64_t* rowptr, const Dims& n, T scale, T clamp, T* __restrict__ out,
                    T* __restrict__ per_dim, T* __restrict__ scores, T* __restrict__ weights) {
  // DC > 0: the head dimension as a compile-time constant (unrolled per-head loops)
  const int64_t H = n.H, D = DC > 0 ? DC : n.D, C = n.H * D;
  at::parallel_for(0, n.N, 16, [&](int64_t begin, int64_t end) {
    std::vector<T> qs(C), pd(C), xb(C), s(H), x(H), denom(H);
    for (int64_t i = begin; i < end; ++i) {
      const T* qi = q + i * n.q_row;
      for (int64_t c = 0; c < C; ++c) qs[c] = qi[c] * scale;
      T* oi = out + i * C;
      std::fill(oi, oi + C, T(0));
      std::fill(denom.begin(), denom.end(), T(0));
      for (int64_t p = rowptr[i]; p < rowptr[i + 1]; ++p) {
        const int64_t e = perm[p], j = src[e];
        const T* kj = k + j * n.k_row;
        const T* vj = v + j * n.v_row;
        T* pe = per_dim ? per_dim + e * C : pd.data();
        if (g) {
          const T* ge = g + e * C;
          for (int64_t c = 0; c < C; ++c) pe[c] = qs[c] * kj[c] * ge[c];
        } else {
          for (int64_t c = 0; c < C; ++c) pe[c] = qs[c] * kj[c];
        }
        head_sums(pe, H, D, s.data());
        for (int64_t h = 0; h < H; ++h) {
          scores[e * H + h] = s[h];
          x[h] = std::exp(std::min(std::max(s[h], -clamp), clamp));
          weights[e * H + h] = x[h];
          denom[h] += x[h];
        }
        broadcast_heads(x.data(), H, D, xb.data());
        for (int64_t c = 0; c < C; ++c) oi[c] += xb[c] * vj[c];
      }
      for (int64_t h = 0; h < H; ++h) {
        const T dn = denom[h] > 0 ? denom[h] : T(1);
        for (int64_t d = 0; d < D; ++d) oi[h * D + d] /= dn;
        for (int64_t p = rowptr[i]; p < rowptr[i + 1]; ++p) weights[perm[p] * H + h] /= dn;
      }
    }
  });
}

// Pass 1, per target node i: ds (stored per edge and head), dq[i] and dg[e].
template <typename T, int64_t DC>
void backward_target_kernel(const T* __restrict__ go, const T* __restrict__ gp,
                            const T* __restrict__ q, const T* __restrict__ k,
                            const T* __restrict__ v, const T* __restrict__ g, const int64_t* src,
                            const int64_t* perm, const int64_t* rowptr, const T* __restrict__ out,
                            const T* __restrict__ scores, const T* __restrict__ weights,
                            const Dims& n, T scale, T clamp, T* __restrict__ ds_out,
                            T* __restrict__ dq, T* __restrict__ dg) {
  // DC > 0: the head dimension as a compile-time constant (unrolled per-head loops)
  const int64_t H = n.H, D = DC > 0 ? DC : n.D, C = n.H * D;
  at::parallel_for(0, n.N, 16, [&](int64_t begin, int64_t end) {
    std::vector<T> qs(C), tmp(C), dqs(C), dpb(C), t(H), gw(H), ds(H);
    for (int64_t i = begin; i < end; ++i) {
      const T* qi = q + i * n.q_row;
      const T* goi = go + i * C;
      const T* oi = out + i * C;
      for (int64_t c = 0; c < C; ++c) qs[c] = qi[c] * scale;
      for (int64_t c = 0; c < C; ++c) tmp[c] = goi[c] * oi[c];
      head_sums(tmp.data(), H, D, t.data());
      std::fill(dqs.begin(), dqs.end(), T(0));
      for (int64_t p = rowptr[i]; p < rowptr[i + 1]; ++p) {
        const int64_t e = perm[p], j = src[e];
        const T* kj = k + j * n.k_row;
        const T* vj = v + j * n.v_row;
        for (int64_t c = 0; c < C; ++c) tmp[c] = goi[c] * vj[c];
        head_sums(tmp.data(), H, D, gw.data());
        for (int64_t h = 0; h < H; ++h) {
          const T sc = scores[e * H + h];
          ds[h] = (sc >= -clamp && sc <= clamp) ? weights[e * H + h] * (gw[h] - t[h]) : T(0);
          ds_out[e * H + h] = ds[h];
        }
        broadcast_heads(ds.data(), H, D, dpb.data());
        if (gp) {
          const T* gpe = gp + e * C;
          for (int64_t c = 0; c < C; ++c) dpb[c] += gpe[c];
        }
        if (g) {
          const T* ge = g + e * C;
          T* dge = dg + e * C;
          for (int64_t c = 0; c < C; ++c) {
            dqs[c] += dpb[c] * ge[c] * kj[c];
            dge[c] = dpb[c] * (qs[c] * kj[c]);
          }
        } else {
          for (int64_t c = 0; c < C; ++c) dqs[c] += dpb[c] * kj[c];
        }
      }
      T* dqi = dq + i * C;
      for (int64_t c = 0; c < C; ++c) dqi[c] = dqs[c] * scale;
    }
  });
}

// Pass 2, per source node j (edges grouped by source): dk[j] and dv[j].
template <typename T, int64_t DC>
void backward_source_kernel(const T* __restrict__ go, const T* __restrict__ gp,
                            const T* __restrict__ q, const T* __restrict__ g, const int64_t* dst,
                            const int64_t* perm_src, const int64_t* rowptr_src,
                            const T* __restrict__ weights, const T* __restrict__ ds_in,
                            const Dims& n, T scale, T* __restrict__ dk, T* __restrict__ dv) {
  // DC > 0: the head dimension as a compile-time constant (unrolled per-head loops)
  const int64_t H = n.H, D = DC > 0 ? DC : n.D, C = n.H * D;
  at::parallel_for(0, n.N, 16, [&](int64_t begin, int64_t end) {
    std::vector<T> dpb(C), wb(C);
    for (int64_t j = begin; j < end; ++j) {
      T* dkj = dk + j * C;
      T* dvj = dv + j * C;
      std::fill(dkj, dkj + C, T(0));
      std::fill(dvj, dvj + C, T(0));
      for (int64_t p = rowptr_src[j]; p < rowptr_src[j + 1]; ++p) {
        const int64_t e = perm_src[p], i = dst[e];
        const T* qi = q + i * n.q_row;
        const T* goi = go + i * C;
        broadcast_heads(ds_in + e * H, H, D, dpb.data());
        broadcast_heads(weights + e * H, H, D, wb.data());
        if (gp) {
          const T* gpe = gp + e * C;
          for (int64_t c = 0; c < C; ++c) dpb[c] += gpe[c];
        }
        if (g) {
          const T* ge = g + e * C;
          for (int64_t c = 0; c < C; ++c) dkj[c] += dpb[c] * ge[c] * (qi[c] * scale);
        } else {
          for (int64_t c = 0; c < C; ++c) dkj[c] += dpb[c] * (qi[c] * scale);
        }
        for (int64_t c = 0; c < C; ++c) dvj[c] += wb[c] * goi[c];
      }
    }
  });
}

// Calls f(std::integral_constant<int64_t, DC>) with DC = the head dimension for the common
// sizes, 0 (runtime) otherwise.
template <typename F>
void dispatch_head_dim(int64_t D, F&& f) {
  switch (D) {
    case 4: f(std::integral_constant<int64_t, 4>{}); break;
    case 8: f(std::integral_constant<int64_t, 8>{}); break;
    case 16: f(std::integral_constant<int64_t, 16>{}); break;
    case 32: f(std::integral_constant<int64_t, 32>{}); break;
    default: f(std::integral_constant<int64_t, 0>{});
  }
}

Dims dims_of(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& src) {
  return Dims{q.size(0), q.size(1), q.size(2), src.size(0), q.stride(0), k.stride(0), v.stride(0)};
}

std::tuple<Tensor, Tensor, Tensor, Tensor> sparse_attention_forward(
    const Tensor& q_in, const Tensor& k_in, const Tensor& v_in, const c10::optional<Tensor>& gate_in,
    const Tensor& src, const Tensor& perm, const Tensor& rowptr, double scale, double clamp,
    bool return_scores) {
  check_inputs(q_in, k_in, v_in, gate_in, src, perm, rowptr);
  const Tensor q = packed_rows(q_in), k = packed_rows(k_in), v = packed_rows(v_in);
  const c10::optional<Tensor> gate =
      gate_in.has_value() ? c10::optional<Tensor>(gate_in->contiguous()) : c10::nullopt;
  const Dims n = dims_of(q, k, v, src);
  Tensor out = at::empty({n.N, n.H, n.D}, q.options());
  Tensor per_dim = return_scores ? at::empty({n.E, n.H, n.D}, q.options()) : at::empty({0}, q.options());
  Tensor scores = at::empty({n.E, n.H}, q.options());
  Tensor weights = at::empty({n.E, n.H}, q.options());
  const Tensor srcc = src.contiguous(), permc = perm.contiguous(), rowc = rowptr.contiguous();
  AT_DISPATCH_FLOATING_TYPES(q.scalar_type(), "sparse_attention_forward", [&] {
    dispatch_head_dim(n.D, [&](auto dc) {
    forward_kernel<scalar_t, decltype(dc)::value>(
        q.data_ptr<scalar_t>(), k.data_ptr<scalar_t>(), v.data_ptr<scalar_t>(),
        gate.has_value() ? gate->data_ptr<scalar_t>() : nullptr, srcc.data_ptr<int64_t>(),
        permc.data_ptr<int64_t>(), rowc.data_ptr<int64_t>(), n, static_cast<scalar_t>(scale),
        static_cast<scalar_t>(clamp), out.data_ptr<scalar_t>(),
        return_scores ? per_dim.data_ptr<scalar_t>() : nullptr, scores.data_ptr<scalar_t>(),
        weights.data_ptr<scalar_t>());
    });
  });
  return {out, per_dim, scores, weights};
}

std::tuple<Tensor, Tensor, Tensor, Tensor> sparse_attention_backward(
    const Tensor& grad_out, const c10::optional<Tensor>& grad_per_dim, const Tensor& q_in,
    const Tensor& k_in, const Tensor& v_in, const c10::optional<Tensor>& gate_in, const Tensor& src,
    const Tensor& perm, const Tensor& rowptr, const Tensor& dst, const Tensor& perm_src,
    const Tensor& rowptr_src, const Tensor& out, const Tensor& scores, const Tensor& weights,
    double scale, double clamp) {
  check_inputs(q_in, k_in, v_in, gate_in, src, perm, rowptr);
  const Tensor q = packed_rows(q_in), k = packed_rows(k_in), v = packed_rows(v_in);
  const c10::optional<Tensor> gate =
      gate_in.has_value() ? c10::optional<Tensor>(gate_in->contiguous()) : c10::nullopt;
  const Dims n = dims_of(q, k, v, src);
  const Tensor go = grad_out.contiguous();
  const c10::optional<Tensor> gp =
      grad_per_dim.has_value() ? c10::optional<Tensor>(grad_per_dim->contiguous()) : c10::nullopt;
  TORCH_CHECK(go.sizes() == out.sizes(), "sparse_attention_backward: grad_out must match out");
  TORCH_CHECK(dst.sizes() == src.sizes() && perm_src.sizes() == src.sizes() &&
                  rowptr_src.sizes() == rowptr.sizes(),
              "sparse_attention_backward: dst, perm_src, rowptr_src must match src, rowptr");
  Tensor dq = at::empty({n.N, n.H, n.D}, q.options());
  Tensor dk = at::empty({n.N, n.H, n.D}, q.options());
  Tensor dv = at::empty({n.N, n.H, n.D}, q.options());
  Tensor ds = at::empty({n.E, n.H}, q.options());
  Tensor dg = gate.has_value() ? at::empty({n.E, n.H, n.D}, q.options()) : at::empty({0}, q.options());
  const Tensor srcc = src.contiguous(), permc = perm.contiguous(), rowc = rowptr.contiguous();
  const Tensor dstc = dst.contiguous(), psc = perm_src.contiguous(), rsc = rowptr_src.contiguous();
  const Tensor outc = out.contiguous(), sc = scores.contiguous(), wc = weights.contiguous();
  AT_DISPATCH_FLOATING_TYPES(q.scalar_type(), "sparse_attention_backward", [&] {
    const scalar_t* gptr = gate.has_value() ? gate->data_ptr<scalar_t>() : nullptr;
    const scalar_t* gpp = gp.has_value() ? gp->data_ptr<scalar_t>() : nullptr;
    dispatch_head_dim(n.D, [&](auto dc) {
    constexpr int64_t DC = decltype(dc)::value;
    backward_target_kernel<scalar_t, DC>(
        go.data_ptr<scalar_t>(), gpp, q.data_ptr<scalar_t>(), k.data_ptr<scalar_t>(),
        v.data_ptr<scalar_t>(), gptr, srcc.data_ptr<int64_t>(), permc.data_ptr<int64_t>(),
        rowc.data_ptr<int64_t>(), outc.data_ptr<scalar_t>(), sc.data_ptr<scalar_t>(),
        wc.data_ptr<scalar_t>(), n, static_cast<scalar_t>(scale), static_cast<scalar_t>(clamp),
        ds.data_ptr<scalar_t>(), dq.data_ptr<scalar_t>(),
        gate.has_value() ? dg.data_ptr<scalar_t>() : nullptr);
    backward_source_kernel<scalar_t, DC>(
        go.data_ptr<scalar_t>(), gpp, q.data_ptr<scalar_t>(), gptr, dstc.data_ptr<int64_t>(),
        psc.data_ptr<int64_t>(), rsc.data_ptr<int64_t>(), wc.data_ptr<scalar_t>(),
        ds.data_ptr<scalar_t>(), n, static_cast<scalar_t>(scale), dk.data_ptr<scalar_t>(),
        dv.data_ptr<scalar_t>());
    });
  });
  return {dq, dk, dv, dg};
}

}  // namespace

TORCH_LIBRARY(graph_transformers, m) {
  m.def("csr_index(Tensor index, int num_nodes) -> (Tensor, Tensor)");
  m.def("sparse_attention_forward(Tensor q, Tensor k, Tensor v, Tensor? gate, Tensor src, "
        "Tensor perm, Tensor rowptr, float scale, float clamp, bool return_scores) "
        "-> (Tensor, Tensor, Tensor, Tensor)");
  m.def("sparse_attention_backward(Tensor grad_out, Tensor? grad_per_dim, Tensor q, Tensor k, "
        "Tensor v, Tensor? gate, Tensor src, Tensor perm, Tensor rowptr, Tensor dst, "
        "Tensor perm_src, Tensor rowptr_src, Tensor out, Tensor scores, Tensor weights, "
        "float scale, float clamp) -> (Tensor, Tensor, Tensor, Tensor)");
}

TORCH_LIBRARY_IMPL(graph_transformers, CPU, m) {
  m.impl("csr_index", &csr_index);
  m.impl("sparse_attention_forward", &sparse_attention_forward);
  m.impl("sparse_attention_backward", &sparse_attention_backward);
}
