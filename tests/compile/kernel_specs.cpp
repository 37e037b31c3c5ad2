#include "kernel_specs.h"

#include <cstdio>
#include <limits>
#include <sstream>
#include <stdexcept>
#include <tuple>

#include "dg.h"
#include "ops/batched_gemm.h"
#include "ops/gemm.h"
#include "ops/hc_prenorm_gemm.h"
#include "ops/l2_flush.h"
#include "ops/layout.h"
#include "ops/mqa_logits.h"
#include "ops/nvfp4_gemv.h"
#include "ops/quantize.h"
#include "ops/skinny_gemm.h"
#include "ops/transpose.h"

namespace dg::test {

namespace {

using dg::codegen::Value;

void write_json(std::ostream& os, const Value& v) {
  auto string = [&](const std::string& s) {
    os << '"';
    for (const char c : s) {
      if (c == '"' || c == '\\') {
        os << '\\' << c;
      } else if (static_cast<unsigned char>(c) < 0x20) {
        char esc[8];
        std::snprintf(esc, sizeof esc, "\\u%04x", c);
        os << esc;
      } else {
        os << c;
      }
    }
    os << '"';
  };
  switch (v.type()) {
    case Value::Type::Null: os << "null"; break;
    case Value::Type::Bool: os << (v.as_bool() ? "true" : "false"); break;
    case Value::Type::Int: os << v.as_int(); break;
    case Value::Type::Double: {
      std::ostringstream d;
      d.precision(std::numeric_limits<double>::max_digits10);
      d << v.as_double();
      // A double must stay a double when read back (JSON readers make "2" an int).
      const std::string text = d.str();
      os << text << (text.find_first_of(".eEn") == std::string::npos ? ".0" : "");
      break;
    }
    case Value::Type::String: string(v.as_string()); break;
    case Value::Type::List: {
      os << '[';
      const char* sep = "";
      for (const Value& item : v.as_list()) {
        os << sep;
        write_json(os, item);
        sep = ", ";
      }
      os << ']';
      break;
    }
    case Value::Type::Map: {
      os << '{';
      const char* sep = "";
      for (const auto& [k, item] : v.as_map()) {
        os << sep;
        string(k);
        os << ": ";
        write_json(os, item);
        sep = ", ";
      }
      os << '}';
      break;
    }
  }
}

void require(dg_status s, const char* what) {
  if (s != DG_SUCCESS) throw std::runtime_error(std::string(what) + ": " + dg_last_error());
}

}  // namespace

std::string to_json(const Value& v) {
  std::ostringstream os;
  write_json(os, v);
  return os.str();
}

std::map<std::string, std::vector<dg::jit::KernelSpec>> representative_kernel_specs() {
  std::map<std::string, std::vector<dg::jit::KernelSpec>> out;
  auto add = [&](const dg::jit::KernelSpec& spec) {
    std::string family = spec.template_name.substr(spec.template_name.rfind('/') + 1);
    out[family.substr(0, family.find('.'))].push_back(spec);
  };
  using dg::ops::LayoutOp;
  for (LayoutOp op : {LayoutOp::kTranspose, LayoutOp::kPackUe8m0})
    for (bool mn_major : {false, true}) add(dg::ops::layout_kernel_spec(op, mn_major, dg::ops::layout_tile_cols(4)));
  for (int vec : {1, 4}) add(dg::ops::k_grouped_pack_kernel_spec(vec));

  using dg::ops::GemmKind;
  using dg::ops::Major;
  struct Problem {
    GemmKind kind;
    int64_t m, n, k;
    Major ma, mb;
    dg_dtype d;
    bool acc;
  };
  for (const Problem& p : {Problem{GemmKind::kBf16, 4096, 7168, 2048, Major::kK, Major::kK, DG_DTYPE_BFLOAT16, false},
                           Problem{GemmKind::kBf16, 128, 2112, 7168, Major::kMN, Major::kMN, DG_DTYPE_FLOAT32, true},
                           Problem{GemmKind::kFp8_1D2D, 4096, 7168, 16384, Major::kK, Major::kK, DG_DTYPE_BFLOAT16, false},
                           Problem{GemmKind::kFp8_1D1D, 7168, 4096, 4096, Major::kK, Major::kK, DG_DTYPE_FLOAT32, true}}) {
    dg::ops::GemmShape s;
    s.kind = p.kind;
    s.m = p.m;
    s.n = p.n;
    s.k = p.k;
    s.major_a = p.ma;
    s.major_b = p.mb;
    s.d_dtype = p.d;
    s.accumulate = p.acc;
    dg::ops::GemmConfig c;
    require(dg::ops::choose_gemm_config(s, 132, {}, &c), "choose_gemm_config");
    add(dg::ops::gemm_kernel_spec(s, c));
  }
  // The batched types behind dg_bf16_einsum: per head with B MN-major, and the batch sum into FP32 D.
  for (const bool reduce : {false, true}) {
    dg::ops::BatchedArgs args;
    args.reduce = reduce, args.batches = reduce ? 129 : 8, args.m = reduce ? 128 : 4096, args.n = reduce ? 384 : 4096;
    args.k = reduce ? 128 : 1024;
    args.b.major = reduce ? Major::kK : Major::kMN;
    args.d_dtype = reduce ? DG_DTYPE_FLOAT32 : DG_DTYPE_BFLOAT16;
    const dg::ops::GemmShape s = dg::ops::batched_gemm_shape(args);
    dg::ops::GemmConfig c;
    require(dg::ops::choose_gemm_config(s, 132, dg::ops::batched_gemm_override(args, {}), &c), "choose_gemm_config");
    add(dg::ops::gemm_kernel_spec(s, c));
  }
  {
    // Per head with few rows (MLA decoding, b = 4, h = 128, d = 512 in "bhd,hdr->bhr"): the operands
    // swapped, D stored transposed.
    dg::ops::BatchedArgs args;
    args.batches = 128, args.m = 4, args.n = 512, args.k = 128;
    args.b.major = Major::kMN;
    const dg::ops::BatchedPlan plan = dg::ops::plan_batched_gemm(args, {});
    require(plan.shape.transpose_d ? DG_SUCCESS : DG_ERROR_INTERNAL, "plan_batched_gemm swaps b = 4");
    dg::ops::GemmConfig c;
    require(dg::ops::choose_gemm_config(plan.shape, 132, plan.over, &c), "choose_gemm_config");
    add(dg::ops::gemm_kernel_spec(plan.shape, c));
  }
  {
    // dg_fp8_einsum's per-head FP8 1D2D GEMM (DeepGEMM's b = 4096, h = 8, r = 4096, d = 1024).
    dg::ops::BatchedArgs args;
    args.kind = GemmKind::kFp8_1D2D, args.batches = 8, args.m = 4096, args.n = 1024, args.k = 4096;
    const dg::ops::GemmShape s = dg::ops::batched_gemm_shape(args);
    dg::ops::GemmConfig c;
    require(dg::ops::choose_gemm_config(s, 132, dg::ops::batched_gemm_override(args, {}), &c), "choose_gemm_config");
    add(dg::ops::gemm_kernel_spec(s, c));
  }
  for (GemmKind kind : {GemmKind::kBf16, GemmKind::kFp8_1D2D}) {
    dg::ops::GemmShape s;
    s.kind = kind, s.m = 9, s.n = 576, s.k = 7168, s.accumulate = kind == GemmKind::kBf16;
    dg::ops::SkinnyConfig c;
    require(dg::ops::choose_skinny_config(s, 132, {}, &c), "choose_skinny_config");
    add(dg::ops::skinny_kernel_spec(s, c));
  }
  add(dg::ops::gemm_scale_kernel_spec(DG_DTYPE_BFLOAT16, true));
  add(dg::ops::gemm_scale_kernel_spec(DG_DTYPE_FLOAT32, false));
  add(dg::ops::transpose_kernel_spec());
  add(dg::ops::l2_flush_kernel_spec());
  std::vector<dg::ops::QuantVariant> quant(dg::ops::quantize_variants(nullptr, 0));
  dg::ops::quantize_variants(quant.data(), static_cast<int>(quant.size()));
  for (const dg::ops::QuantVariant& v : quant) add(dg::ops::quantize_kernel_spec(v));

  for (const dg::ops::MqaLogitsConfig& c : dg::ops::all_mqa_logits_configs()) add(dg::ops::mqa_logits_kernel_spec(c));
  for (const dg::ops::PagedMqaLogitsConfig& c : dg::ops::all_paged_mqa_logits_configs())
    add(dg::ops::paged_mqa_logits_kernel_spec(c));
  add(dg::ops::paged_mqa_metadata_kernel_spec());

  for (int arch : {90, 100}) {
    for (const auto& [m, k, l] : {std::tuple{7168, 16384, 1}, std::tuple{1000, 256, 3}}) {
      dg::ops::Nvfp4GemvConfig c;
      require(dg::ops::choose_nvfp4_gemv_config(m, k, l, 16, arch, {}, &c), "choose_nvfp4_gemv_config");
      add(dg::ops::nvfp4_gemv_kernel_spec(c));
    }
  }
  for (const dg::ops::HcPrenormConfig& c : dg::ops::all_hc_prenorm_configs()) add(dg::ops::hc_prenorm_kernel_spec(c));
  return out;
}

}  // namespace dg::test
