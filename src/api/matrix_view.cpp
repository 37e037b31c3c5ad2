#include "api/matrix_view.h"

#include "runtime/status.h"

namespace dg::api {

dg_status check_row_major_output(const dg_tensor_s& t, const char* arg, int64_t m, int64_t n, bool tma) {
  DG_TRY(check_rank(t, arg, {2}));
  DG_TRY(check_size(t, arg, 0, m, "M"));
  DG_TRY(check_size(t, arg, 1, n, "N"));
  if (n > 1 && t.strides[1] != 1)
    return fail(DG_ERROR_INVALID_ARGUMENT, "{}: stride(1) is {} (expected 1: C and D must be row-major); shape {}", arg,
                t.strides[1], describe(t));
  if (m > 1 && t.strides[0] < n)
    return fail(DG_ERROR_INVALID_ARGUMENT, "{}: stride(0) is {} (expected >= N = {}); shape {}", arg, t.strides[0], n,
                describe(t));
  if (!tma) return DG_SUCCESS;
  const int64_t eb = static_cast<int64_t>(dtype_size(t.dtype));
  if (m > 1 && (t.strides[0] * eb) % 16 != 0)
    return fail(DG_ERROR_INVALID_ARGUMENT,
                "{}: row stride {} elements is not a multiple of 16 bytes (TMA; N % {} == 0 when contiguous); shape {}",
                arg, t.strides[0], 16 / eb, describe(t));
  if (reinterpret_cast<uintptr_t>(t.data) % 16 != 0)
    return fail(DG_ERROR_INVALID_ARGUMENT, "{}: data pointer {} is not 16-byte aligned (TMA)", arg, t.data);
  return DG_SUCCESS;
}

}  // namespace dg::api
