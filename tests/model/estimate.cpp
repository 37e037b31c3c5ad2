// dg-gemm-estimate: the SM90 GEMM heuristic's cost model, queried offline (bench/models/fit_gemm_model.py).
// Reads lines from stdin and answers each on one line of stdout (132 SMs, the H100 SXM's and the H200's
// count), with the Hopper calibration or, after --device NAME, the one libdg uses on a GPU of that name:
//   KIND M N K BM BN STAGES CLUSTER MCA PROMO SLICES SPLITK  -> the model's microseconds for that
//       config (0 / -1 fields: heuristic's choice), or "ERR <message>" where it cannot run;
//   H KIND M N K -> "<us> BM BN STAGES CLUSTER MCA PROMO SLICES SPLITK", the heuristic's own choice;
//   G KIND GROUPS M N K [BM BN STAGES CLUSTER MCA PROMO SLICES SPLITK] -> the same for a K-grouped
//       problem (K = the groups' mean, D += ..., BF16 operands MN-major as the tn form reads them),
//       with an optional explicit config as in the first form;
//   Q KIND GROUPS MAX_M EXPECTED_M N K BM BN STAGES CLUSTER MCA PROMO SLICES SPLITK -> the same as H for
//       a masked M-grouped problem (BF16 D); BM.. as in the first form (0 / -1: the heuristic's);
//   R KIND GROUPS MAX_M EXPECTED_M ROW_BLOCKS N K BM .. SPLITK -> as Q, priced at ROW_BLOCKS row blocks
//       of BM rows in all (a known total of the groups' counts, as the count-adaptive rule prices each);
//   A KIND GROUPS MAX_M EXPECTED_M N K -> the heuristic's masked choice as Q answers it, then for each
//       count-adaptive tile " alt BN STAGES TOTALS" (TOTALS: the totals of row blocks that run it, as
//       ranges "4,7-8,16");
//   C KIND GROUPS M N K [BM .. SPLITK] -> the same for an M-grouped contiguous problem (M: A's rows,
//       per-row group indices, expected_m = M / GROUPS as the call's default).
// KIND: 0 BF16, 1 FP8 1D2D, 2 FP8 1D1D. PROMO: 1 after, 2 overlapped (DG_FP8_PROMOTION_*).
#include <algorithm>
#include <cstdio>
#include <cstring>
#include <string>

#include "dg.h"
#include "ops/gemm.h"
#include "ops/gemm_cost_model.h"

static const char kUsage[] =
    "Usage: dg-gemm-estimate [--device NAME] [--help] [--version] < QUERIES\n"
    "\n"
    "The SM90 GEMM heuristic's cost model, queried offline (132 SMs). One query per line of stdin,\n"
    "one answer per line of stdout (\"ERR <message>\" where the config cannot run):\n"
    "  KIND M N K BM BN STAGES CLUSTER MCA PROMO SLICES SPLITK      the model's microseconds\n"
    "  H KIND M N K                                                 the heuristic's choice:\n"
    "      <us> BM BN STAGES CLUSTER MCA PROMO SLICES SPLITK\n"
    "  G KIND GROUPS M N K [BM BN STAGES CLUSTER MCA PROMO SLICES SPLITK]   K-grouped, as H\n"
    "  C KIND GROUPS M N K [BM .. SPLITK]                           M-grouped contiguous (M: A's rows), as H\n"
    "  Q KIND GROUPS MAX_M EXPECTED_M N K BM .. SPLITK              masked M-grouped, as H\n"
    "  R KIND GROUPS MAX_M EXPECTED_M ROW_BLOCKS N K BM .. SPLITK   as Q at a known total of row blocks\n"
    "  A KIND GROUPS MAX_M EXPECTED_M N K                           masked, as Q, then each count-adaptive\n"
    "      tile: alt BN STAGES TOTALS (the totals of row blocks that run it, as ranges 4,7-8,16)\n"
    "KIND: 0 BF16, 1 FP8 1D2D, 2 FP8 1D1D. PROMO: 1 after, 2 overlapped. 0 / -1 config fields:\n"
    "the heuristic's choice.\n"
    "\n"
    "  --device NAME   rank with the calibration libdg uses on a GPU named NAME (as the driver names\n"
    "                  it, e.g. \"NVIDIA H200\"); default: the Hopper calibration\n"
    "\n"
    "Exit status: 0 (malformed lines are answered ERR), 2 on a usage error.\n";

// 0 to read queries, 1 when an option was answered, 2 on a usage error. `model`: --device's calibration.
static int parse_args(int argc, char** argv, const dg::ops::Sm90CostModel** model) {
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--device") == 0) {
      if (i + 1 == argc) {
        std::fprintf(stderr, "dg-gemm-estimate: --device needs a GPU name\n\n%s", kUsage);
        return 2;
      }
      *model = &dg::ops::sm90_cost_model(argv[++i]);
      continue;
    }
    if (std::strcmp(argv[i], "--help") == 0 || std::strcmp(argv[i], "-h") == 0) {
      std::fputs(kUsage, stdout);
      return 1;
    }
    if (std::strcmp(argv[i], "--version") == 0) {
      std::printf("dg-gemm-estimate (libdg) %s\n", dg_version());
      return 1;
    }
    std::fprintf(stderr, "dg-gemm-estimate: unknown argument '%s'\n\n%s", argv[i], kUsage);
    return 2;
  }
  return 0;
}

// The totals of row blocks at which a count-adaptive tile runs, as ranges ("4,7-8,16").
static std::string total_ranges(const dg::ops::GemmAltTile& t) {
  std::string out;
  for (int r = 0; r < dg::ops::kAltRowBlocks; ++r) {
    if (!t.runs(r)) continue;
    int last = r;
    while (t.runs(last + 1)) ++last;
    out += (out.empty() ? "" : ",") + std::to_string(r) + (last > r ? "-" + std::to_string(last) : std::string());
    r = last;
  }
  return out;
}

// A K-grouped query's explicit config is optional: 5 or 13 fields read are a well-formed line (4, as
// the other heuristic queries count theirs).
static int k_grouped_fields(int read) { return read == 5 || read == 13 ? 4 : -1; }

int main(int argc, char** argv) {
  const dg::ops::Sm90CostModel* model = &dg::ops::hopper_cost_model();
  if (const int parsed = parse_args(argc, argv, &model)) return parsed == 1 ? 0 : 2;
  char line[512];
  while (std::fgets(line, sizeof line, stdin)) {
    dg::ops::GemmShape s;
    dg::ops::GemmOverride o;
    int kind = 0;
    long long m = 0, n = 0, k = 0;
    const bool k_grouped = line[0] == 'G', at_blocks = line[0] == 'R', adaptive = line[0] == 'A',
               masked = line[0] == 'Q' || at_blocks || adaptive, contiguous = line[0] == 'C';
    const bool heuristic = line[0] == 'H' || k_grouped || masked || contiguous;
    long long groups = 1, expected_m = 0, row_blocks = 0;
    const int fields =
        at_blocks ? std::sscanf(line + 1, "%d %lld %lld %lld %lld %lld %lld %d %d %d %d %d %d %d %d", &kind, &groups,
                                &m, &expected_m, &row_blocks, &n, &k, &o.block_m, &o.block_n, &o.stages, &o.cluster,
                                &o.multicast_a, &o.fp8_promotion, &o.promotion_slices, &o.split_k) - 11
        : adaptive ? std::sscanf(line + 1, "%d %lld %lld %lld %lld %lld", &kind, &groups, &m, &expected_m, &n, &k) - 2
        : masked ? std::sscanf(line + 1, "%d %lld %lld %lld %lld %lld %d %d %d %d %d %d %d %d", &kind, &groups, &m,
                             &expected_m, &n, &k, &o.block_m, &o.block_n, &o.stages, &o.cluster, &o.multicast_a,
                             &o.fp8_promotion, &o.promotion_slices, &o.split_k) - 10
        : k_grouped || contiguous ? k_grouped_fields(std::sscanf(line + 1, "%d %lld %lld %lld %lld %d %d %d %d %d %d %d %d", &kind,
                                                   &groups, &m, &n, &k, &o.block_m, &o.block_n, &o.stages,
                                                   &o.cluster, &o.multicast_a, &o.fp8_promotion,
                                                   &o.promotion_slices, &o.split_k))
        : heuristic ? std::sscanf(line + 1, "%d %lld %lld %lld", &kind, &m, &n, &k)
                    : std::sscanf(line, "%d %lld %lld %lld %d %d %d %d %d %d %d %d", &kind, &m, &n, &k, &o.block_m,
                                  &o.block_n, &o.stages, &o.cluster, &o.multicast_a, &o.fp8_promotion,
                                  &o.promotion_slices, &o.split_k);
    if (fields != (heuristic ? 4 : 12) || kind < 0 || kind > 2 || groups < 1 || ((masked || contiguous) && kind == 2) ||
        (at_blocks && row_blocks < 1)) {
      std::printf("ERR malformed line\n");
      continue;
    }
    s.kind = static_cast<dg::ops::GemmKind>(kind);
    s.m = m, s.n = n, s.k = k;
    s.d_dtype = kind == 2 ? DG_DTYPE_FLOAT32 : DG_DTYPE_BFLOAT16;
    if (masked) {
      s.type = dg::ops::GemmType::kMGroupedMasked;
      s.num_groups = groups;
      s.expected_m = expected_m;
      s.row_blocks = row_blocks;
    }
    if (contiguous) {
      s.type = dg::ops::GemmType::kMGroupedContiguous;
      s.num_groups = groups;
      s.expected_m = std::max(1LL, m / groups);  // as dg_m_grouped_gemm_nt_contiguous's default
    }
    if (k_grouped) {
      s.type = dg::ops::GemmType::kKGrouped;
      s.num_groups = groups;
      s.d_dtype = DG_DTYPE_FLOAT32;
      s.accumulate = true;
      if (kind == 0) s.major_a = s.major_b = dg::ops::Major::kMN;
    }
    dg::ops::GemmConfig c;
    if (dg::ops::choose_gemm_config(s, 132, o, *model, &c) != DG_SUCCESS) {
      std::printf("ERR %s\n", dg_last_error());
      continue;
    }
    if (heuristic)
      std::printf("%.3f %d %d %d %d %d %d %d %d", c.estimate_us, c.block_m, c.block_n, c.stages, c.cluster,
                  c.cluster == 2 ? int(c.multicast_a) : -1, c.overlap ? 2 : 1, c.promote_split, c.split_k);
    else
      std::printf("%.3f", c.estimate_us);
    if (adaptive)
      for (int i = 0; i < c.alt_tiles(); ++i)
        std::printf(" alt %d %d %s", c.alts[i].block_n, c.alts[i].stages, total_ranges(c.alts[i]).c_str());
    std::printf("\n");
  }
  return 0;
}
