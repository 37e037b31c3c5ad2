#include "runtime/stream.h"

#include "runtime/status.h"

namespace dg {

const Config& config_of(const dg_stream_s& stream) { return stream.config ? *stream.config : default_config(); }

dg_status num_sms_of(const dg_stream_s& stream, int* num_sms) {
  const int device_sms = stream.device->sm_count;
  int cap = config_of(stream).num_sms;
  const char* source = "the stream's config (DG_CONFIG_NUM_SMS)";
  if (cap == 0) {
    cap = globals().num_sms;
    source = "dg_set_num_sms";
  }
  if (cap > device_sms)
    return fail(DG_ERROR_INVALID_ARGUMENT, "num_sms: {} from {} exceeds the {} SMs of device {} ({})", cap, source,
                device_sms, stream.device->ordinal, stream.device->name);
  *num_sms = cap > 0 ? cap : device_sms;
  return DG_SUCCESS;
}

dg_status check_stream(const dg_stream_s* stream, const char* arg) {
  if (stream == nullptr) return fail(DG_ERROR_INVALID_ARGUMENT, "{}: is NULL (expected a dg_stream)", arg);
  return DG_SUCCESS;
}

}  // namespace dg
