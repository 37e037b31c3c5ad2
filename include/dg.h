/*
 * libdg — DeepGEMM's kernels behind a C ABI.
 *
 * One header, C99, no CUDA header needed: CUDA handles cross the ABI as `void*` (a CUstream is a
 * pointer). Conventions used throughout:
 *   - Every fallible function returns a dg_status; DG_SUCCESS is 0. On failure, dg_last_error()
 *     gives this thread's message naming the argument, its value and what was expected.
 *   - Constructors return through an out-parameter; destructors accept NULL.
 *   - On failure no out-parameter is written: handles, sizes and counts keep what the caller put
 *     there. The one exception is dg_config_get_string's `*required`, set when `capacity` is too
 *     small so that the caller can size its buffer.
 *   - Structs that cross the ABI start with `size_t struct_size`; initialise them with the
 *     matching *_INIT macro so that later versions can append fields.
 *   - Every entry point may be called from any thread. Handles may be shared between threads as
 *     long as no thread destroys one while another uses it.
 *   - Nothing on a kernel's launch path allocates device memory: where a kernel needs an output
 *     or scratch buffer, a query function gives its size and layout and the caller passes it.
 *
 * ABI promise: within one major version, functions and enum values are only ever added; the
 * soname is libdg.so.<major>.
 */
#ifndef DG_H
#define DG_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define DG_VERSION_MAJOR 0
#define DG_VERSION_MINOR 7
#define DG_VERSION_PATCH 0
/* MAJOR * 10000 + MINOR * 100 + PATCH */
#define DG_VERSION_NUMBER (DG_VERSION_MAJOR * 10000 + DG_VERSION_MINOR * 100 + DG_VERSION_PATCH)

#if defined(DG_BUILDING_LIBRARY)
#define DG_API __attribute__((visibility("default")))
#else
#define DG_API
#endif

/* ============================================================================================
 * Status and errors
 * ========================================================================================== */

typedef int32_t dg_status;
#define DG_SUCCESS 0
#define DG_ERROR_INVALID_ARGUMENT 1 /* a NULL handle, a wrong dtype, sizes that disagree, ... */
#define DG_ERROR_UNSUPPORTED 2      /* valid input that this build or device cannot run */
#define DG_ERROR_NO_DEVICE 3        /* no CUDA driver or no device with that ordinal */
#define DG_ERROR_CUDA 4             /* the CUDA driver returned an error; the message names it */
#define DG_ERROR_COMPILE 5          /* NVRTC/nvcc failed; the message holds the compiler log */
#define DG_ERROR_OUT_OF_MEMORY 6    /* host allocation failed */
#define DG_ERROR_INTERNAL 7         /* a bug in libdg: please report the message */

/* Static name of a status ("DG_ERROR_INVALID_ARGUMENT"); "DG_UNKNOWN_STATUS" for other values. */
DG_API const char* dg_status_string(dg_status status);

/* This thread's message for its most recent failure ("" if none). Valid until the next libdg
 * call on this thread. Successful calls do not clear it. */
DG_API const char* dg_last_error(void);

/* Runtime version, "MAJOR.MINOR.PATCH", and the same as DG_VERSION_NUMBER. */
DG_API const char* dg_version(void);
DG_API int32_t dg_version_number(void);

/* A report on this libdg and the machine, the first thing a bug report needs (the dg-info
 * command prints it): version and build, the NVRTC and CUDA driver in use and the files they were
 * loaded from, each GPU with its SM count and whether libdg's kernels run on its architecture,
 * the JIT cache directory with its entry count and size, the compiler and kernel-config choice,
 * and every DG_* (and CUDA_HOME, CUDA_PATH, CUDA_VISIBLE_DEVICES) environment variable set.
 * Plain text, one "key: value" line per item; the keys (libdg, build, library, nvrtc, driver,
 * devices, device N, jit cache, jit compiler, sm cap, kernel configs, env) are stable, the values
 * are for people. Needs no GPU: a missing driver is a line of the report, not an error.
 * With buffer NULL and capacity 0, only *required is set: the report's size in bytes including
 * the terminating NUL. Otherwise writes the report, NUL-terminated, when capacity is at least
 * that size, and DG_ERROR_INVALID_ARGUMENT (buffer and *required untouched) when it is not. The
 * report can grow between two calls (a cache entry, a device): retry with the new size. `required`
 * may be NULL. */
DG_API dg_status dg_info_report(char* buffer, size_t capacity, size_t* required);

/* ============================================================================================
 * Logging. libdg prints nothing by itself except through this logger. Default: messages at or
 * above the level go to stderr prefixed "[libdg] ". The initial level comes from DG_LOG_LEVEL
 * (trace, debug, info, warn, error, off or 0..5, any case; default warn).
 *
 * Environment variables that hold numbers, switches or level names (DG_NUM_SMS, DG_TC_UTIL,
 * DG_PDL, DG_JIT_USE_NVRTC, DG_JIT_DEBUG, DG_JIT_CPP_STANDARD, DG_LOG_LEVEL, DG_PRINT_CONFIGS,
 * ...) all follow one rule: leading and trailing whitespace is ignored and an empty or
 * whitespace-only value counts as unset; an integer is an optional '+' or '-' followed by decimal
 * digits and nothing else (" 12", "+12" and "12 " are 12; "0x10", "1e3" and "12a" are refused);
 * a switch is 1/0, true/false, on/off or yes/no in any case. A value that does not parse or is
 * out of range is reported once at warn level, naming the variable, and the default is used.
 * Paths (DG_JIT_CACHE_DIR, DG_JIT_NVCC_COMPILER, DG_TEMPLATE_DIR, DG_TUNING_TABLE) are taken verbatim.
 * ========================================================================================== */

#define DG_LOG_TRACE 0
#define DG_LOG_DEBUG 1
#define DG_LOG_INFO 2
#define DG_LOG_WARN 3
#define DG_LOG_ERROR 4
#define DG_LOG_OFF 5

/* Receives each message at or above the level; `message` has no trailing newline and is valid
 * only during the call. May be called from any thread, concurrently. The callback may call libdg
 * functions (dg_set_log_callback and dg_set_log_level included), also the one whose message it
 * receives: it runs on the thread that logged, but never while libdg holds a lock or is building
 * a kernel there. What a libdg call logs is held until that call has done its work (and every
 * kernel it built is published to other threads), then delivered in order just before it
 * returns; at most 256 messages per call, then one saying how many more were dropped.
 * dg_last_error() after the call is still that call's message, whatever the callback called.
 * Messages libdg would log on that thread while the callback runs are dropped rather than
 * delivered to it recursively. Without a callback, messages go to stderr at once. */
typedef void (*dg_log_callback)(int32_t level, const char* message, void* user_data);

/* Installs `callback` (NULL restores the stderr default). Called from outside a callback, it
 * returns once no thread is still running the callback it replaced, so that callback's user_data
 * may be freed then; called from inside a callback, it does not wait. */
DG_API dg_status dg_set_log_callback(dg_log_callback callback, void* user_data);
DG_API dg_status dg_set_log_level(int32_t level);
DG_API int32_t dg_get_log_level(void);

/* ============================================================================================
 * Data types
 * ========================================================================================== */

typedef int32_t dg_dtype;
#define DG_DTYPE_FLOAT32 1
#define DG_DTYPE_FLOAT16 2
#define DG_DTYPE_BFLOAT16 3
#define DG_DTYPE_FLOAT8_E4M3 4   /* "e4m3fn": finite, max 448 */
#define DG_DTYPE_FLOAT8_E5M2 5
#define DG_DTYPE_INT32 6
#define DG_DTYPE_FLOAT4_E2M1X2 7 /* one byte = two E2M1 values, the even index in the low nibble */
#define DG_DTYPE_UE8M0X4 8       /* one int32 = four UE8M0 exponents, the lowest index in byte 0 */
#define DG_DTYPE_UINT8 9

/* Bytes per element (an E2M1X2 element is one byte), or 0 for an unknown dtype. */
DG_API size_t dg_dtype_size(dg_dtype dtype);
/* Static name ("bfloat16", ...), or "unknown". */
DG_API const char* dg_dtype_name(dg_dtype dtype);

/* ============================================================================================
 * Configuration
 *
 * A dg_config holds settings; enum-keyed setters check bounds (dg_config_get_bounds). A new
 * config takes its defaults from the environment:
 *   DG_NUM_SMS (num_sms), DG_TC_UTIL (tc_util), DG_PDL (pdl), DG_JIT_CACHE_DIR (cache dir),
 *   DG_JIT_USE_NVRTC=0 (compiler = nvcc), DG_PRINT_CONFIGS (print configs), DG_LOG_LEVEL,
 *   DG_TUNING_TABLE (tuning table).
 * Boolean variables accept 1/0, true/false, on/off and yes/no in any case. A value that is not
 * understood is ignored (the default applies) with one warning naming the variable.
 * ========================================================================================== */

typedef struct dg_config_s dg_config;

typedef int32_t dg_config_key;
/* int: cap on SMs a kernel may use; 0 = the process-wide value (dg_set_num_sms), which in turn
 * defaults to every SM of the device. Bounds [0, 1024]; a value above the device's SM count is
 * rejected when a kernel is launched. */
#define DG_CONFIG_NUM_SMS 1
/* int: tensor-core utilisation target in percent, [1, 100]; only SM100 BF16 kernels honour < 100. */
#define DG_CONFIG_TC_UTIL 2
/* int: 1 = launch with Programmatic Dependent Launch, 0 = off (default). */
#define DG_CONFIG_PDL 3
/* string: JIT cache root; entries live under <root>/libdg/. Default $DG_JIT_CACHE_DIR, else
 * $HOME/.deep_gemm. The empty string disables the disk cache (memory only). A directory that can
 * be read but not written (e.g. warmed into a read-only container image) serves its kernels; new
 * ones are kept in memory, with one warning. */
#define DG_CONFIG_CACHE_DIR 4
/* int: DG_COMPILER_NVRTC (default) or DG_COMPILER_NVCC. */
#define DG_CONFIG_COMPILER 5
/* int: 1 = log each distinct problem's chosen kernel config once (to the logger at warn level,
 * so it shows with the default level), as DeepGEMM's DG_PRINT_CONFIGS does. */
#define DG_CONFIG_PRINT_CONFIGS 6
/* int: a DG_LOG_* level applied to the process-wide logger when the config is created from the
 * environment or set explicitly. */
#define DG_CONFIG_LOG_LEVEL 7
/* string: the GEMM tuning table (docs/tuning.md) that calls consult on their first use of a
 * problem. Default $DG_TUNING_TABLE, else "" = <cache dir>/libdg/tuning-<gpu>-<sms>sm.txt beside
 * the JIT cache (none when the cache is disabled); "off" = no table. A missing file is no table;
 * a corrupt one, or one written for another GPU, SM count or libdg version, is ignored with one
 * warning. Read only: a read-only file or directory serves. */
#define DG_CONFIG_TUNING_TABLE 8

#define DG_COMPILER_NVRTC 0
#define DG_COMPILER_NVCC 1

DG_API dg_status dg_config_create(dg_config** config);
DG_API void dg_config_destroy(dg_config* config);
/* Copies every setting of `source` into a new config. */
DG_API dg_status dg_config_clone(const dg_config* source, dg_config** config);
DG_API dg_status dg_config_set_int(dg_config* config, dg_config_key key, int64_t value);
DG_API dg_status dg_config_get_int(const dg_config* config, dg_config_key key, int64_t* value);
/* String settings. get copies at most `capacity` bytes (NUL included) into `buffer` and stores
 * the full length (NUL included) in `*required` when that is not NULL; `buffer` may be NULL to
 * query the length only. */
DG_API dg_status dg_config_set_string(dg_config* config, dg_config_key key, const char* value);
DG_API dg_status dg_config_get_string(const dg_config* config, dg_config_key key, char* buffer,
                                      size_t capacity, size_t* required);
/* Inclusive bounds of an int setting. */
DG_API dg_status dg_config_get_bounds(dg_config_key key, int64_t* min_value, int64_t* max_value);

/* Process-wide defaults, as in DeepGEMM. num_sms: 0 resets to "all SMs". get_num_sms returns
 * the value set, or the SM count of device 0 when unset, or 0 when there is no device. */
DG_API dg_status dg_set_num_sms(int32_t num_sms);
DG_API int32_t dg_get_num_sms(void);
/* Tensor-core utilisation as a ratio in (0, 1]; 0 resets to 1. */
DG_API dg_status dg_set_tc_util(double ratio);
DG_API double dg_get_tc_util(void);

/* ============================================================================================
 * Devices and streams
 *
 * A dg_stream is where work runs: a device, a CUstream and the config in force. libdg works in
 * the device's primary context (the one the CUDA runtime and PyTorch use). Kernel caches are per
 * device and shared by every stream on it.
 * ========================================================================================== */

typedef struct dg_stream_s dg_stream;

/* Number of CUDA devices; DG_ERROR_NO_DEVICE (with the reason) when the driver cannot be loaded. */
DG_API dg_status dg_device_count(int32_t* count);

/* Compute capability of a device, e.g. 9 and 0 for an H100. */
DG_API dg_status dg_device_get_capability(int32_t device, int32_t* major, int32_t* minor);

/* Flags for dg_stream_create. */
#define DG_STREAM_BORROW 0 /* use `cu_stream` as given (NULL = the legacy default stream) */
#define DG_STREAM_CREATE 1 /* create and own a non-blocking stream; `cu_stream` must be NULL */

/* `config` is copied; NULL means "follow the process-wide settings at each call". */
DG_API dg_status dg_stream_create(dg_stream** stream, int32_t device, void* cu_stream, int32_t flags,
                                  const dg_config* config);
/* An offline stream describes a device instead of using one: kernel preparation calls on it (e.g.
 * dg_gemm_prepare) render and compile kernels into the disk cache for that architecture and SM
 * count, with no GPU and no driver needed; calls that would launch return DG_ERROR_NO_DEVICE. For
 * warming a JIT cache ahead of time, e.g. while building a container. arch_major.arch_minor: 9.0
 * (SM90) or 10.0 (SM100); num_sms: the target's SM count (132 for an H100 SXM). */
DG_API dg_status dg_stream_create_offline(dg_stream** stream, int32_t arch_major, int32_t arch_minor, int32_t num_sms,
                                          const dg_config* config);
/* dg_stream_create_offline for a named GPU: `gpu_name` is the name the driver reports on the target
 * (e.g. "NVIDIA H200"; 1..255 printable ASCII characters), so that the heuristic prices configs with
 * that GPU's calibration of the cost model and the stream reads that GPU's tuning table (the table's
 * GPU name and SM count must match; docs/tuning.md): the prepare calls then compile the kernels a
 * call on that GPU chooses. With the generic description of dg_stream_create_offline, an H200's
 * calls would choose other kernels than were compiled for 9 of DeepSeek-V3's 56 dense GEMMs. */
DG_API dg_status dg_stream_create_offline_named(dg_stream** stream, int32_t arch_major, int32_t arch_minor,
                                                int32_t num_sms, const char* gpu_name, const dg_config* config);
/* Destroys the handle and, for DG_STREAM_CREATE, the CUstream (after pending work completes). */
DG_API void dg_stream_destroy(dg_stream* stream);
DG_API dg_status dg_stream_get_cu_stream(const dg_stream* stream, void** cu_stream);
DG_API dg_status dg_stream_get_device(const dg_stream* stream, int32_t* device);
DG_API dg_status dg_stream_synchronize(dg_stream* stream);

/* ============================================================================================
 * Tensor descriptors. A dg_tensor describes device memory; it never owns it. Sizes and strides
 * are in elements (an E2M1X2 element is one byte holding two values). Major-ness (K-major vs
 * MN-major) is read from the strides, as DeepGEMM does.
 * ========================================================================================== */

typedef struct dg_tensor_s dg_tensor;
#define DG_MAX_RANK 4

/* rank in [1, 4]; sizes >= 0; strides NULL = contiguous row-major, else each stride >= 0. The
 * product of the sizes (zeros counted as 1), each stride in bytes and the byte extent must fit in
 * int64_t (DG_ERROR_INVALID_ARGUMENT otherwise). */
DG_API dg_status dg_tensor_create(dg_tensor** tensor, void* data, dg_dtype dtype, int32_t rank,
                                  const int64_t* sizes, const int64_t* strides);
DG_API void dg_tensor_destroy(dg_tensor* tensor);
/* Rebinds the data pointer (cheap; for reusing one descriptor across calls). */
DG_API dg_status dg_tensor_set_data(dg_tensor* tensor, void* data);
/* Any out-pointer may be NULL; sizes/strides must hold DG_MAX_RANK entries. */
DG_API dg_status dg_tensor_get(const dg_tensor* tensor, void** data, dg_dtype* dtype, int32_t* rank,
                               int64_t* sizes, int64_t* strides);

/* ============================================================================================
 * Host utilities
 * ========================================================================================== */

/* align(x, 16 / element_size): the size TMA needs for a dimension. element_size must divide 16. */
DG_API dg_status dg_get_tma_aligned_size(int64_t x, size_t element_size, int64_t* aligned);

/* Row alignment of each group in M-grouped contiguous layouts (128 on SM90). */
DG_API int32_t dg_get_mk_alignment_for_contiguous_layout(void);

/* ============================================================================================
 * Scaling-factor layouts (docs/layout.md)
 *
 * Each transform writes into a caller-provided `out`. The *_layout query functions give the
 * output's sizes, strides (elements) and the bytes to allocate, for an input of the given
 * shape, so callers can allocate and describe `out` before the call. Inputs are 2-D [MN, SF_K]
 * or batched 3-D [G, MN, SF_K].
 * ========================================================================================== */

/* Output layout of dg_get_mn_major_tma_aligned_tensor for FP32 scales: same sizes, strides
 * (.., 1, align(MN, 4)) and batch stride align(MN, 4) * SF_K, for every shape (DeepGEMM's strides,
 * also along dimensions of size 1: [MN, 1] gives (1, align(MN, 4))). */
DG_API dg_status dg_get_mn_major_tma_aligned_tensor_layout(int32_t rank, const int64_t* sizes,
                                                           int64_t* out_sizes, int64_t* out_strides,
                                                           size_t* out_bytes);
/* Copies FP32 scales `sf` into `out`, which must have the layout above (`sf` may have any
 * strides). */
DG_API dg_status dg_get_mn_major_tma_aligned_tensor(dg_stream* stream, const dg_tensor* sf,
                                                    const dg_tensor* out);

/* Output layout of the UE8M0 packer: INT32 (UE8M0X4) [.., MN, ceil(SF_K / 4)] with strides
 * (.., 1, align(MN, 4)) and batch stride ceil(SF_K / 4) * align(MN, 4). */
DG_API dg_status dg_get_mn_major_tma_aligned_packed_ue8m0_tensor_layout(int32_t rank, const int64_t* sizes,
                                                                        int64_t* out_sizes,
                                                                        int64_t* out_strides,
                                                                        size_t* out_bytes);
/* Packs FP32 scales (powers of two; others are rejected on the device by writing the exponent of
 * the value with sign and mantissa dropped — validate on the host if that matters) into UE8M0X4
 * with the layout above. Missing tail entries are 0. */
DG_API dg_status dg_get_mn_major_tma_aligned_packed_ue8m0_tensor(dg_stream* stream, const dg_tensor* sf,
                                                                 const dg_tensor* out);

/* K-grouped scales (the K-grouped GEMMs' per-token x 128-K scales in their [K blocks, MN] form):
 * FP32 [sum(ks) / 128, MN], one row per 128-wide K block, group g's ks[g] / 128 rows after those
 * of groups 0 .. g-1. ks: num_groups host entries, each >= 0 and a multiple of 128, sum below 2^31.
 * The packed output is INT32 (UE8M0X4) [P, MN] with strides (align(MN, 4), 1) (row-major, as
 * DeepGEMM's for MN % 4 == 0), P = sum over groups of ceil(ks[g] / 512): each group is packed on
 * its own, four K blocks per word as dg_get_mn_major_tma_aligned_packed_ue8m0_tensor does (first
 * block in the low byte, a group's missing tail blocks 0), and the groups' rows follow each other
 * in order. Padding columns MN .. align(MN, 4) - 1 are written as 0. This gives P, the sizes,
 * strides (elements) and bytes of that output for MN = mn; any out-pointer may be NULL. */
DG_API dg_status dg_get_k_grouped_mn_major_tma_aligned_packed_ue8m0_tensor_layout(int64_t mn, const int64_t* ks,
                                                                                  int64_t num_groups,
                                                                                  int64_t* out_sizes,
                                                                                  int64_t* out_strides,
                                                                                  size_t* out_bytes);
/* Packs K-grouped FP32 scales `sf` (powers of two, as for the packer above; any strides, fastest
 * with stride 1 along MN) into `out`, which must have the layout above (16-byte aligned). ks_tensor:
 * NULL or the INT32 [num_groups] device copy of ks that DeepGEMM's API takes; its shape and dtype
 * are checked and nothing reads it: the launch is built from the host ks (a captured CUDA graph
 * replays the ks it was captured with). DeepGEMM: get_k_grouped_mn_major_tma_aligned_packed_ue8m0_tensor. */
DG_API dg_status dg_get_k_grouped_mn_major_tma_aligned_packed_ue8m0_tensor(dg_stream* stream, const dg_tensor* sf,
                                                                           const int64_t* ks, int64_t num_groups,
                                                                           const dg_tensor* ks_tensor,
                                                                           const dg_tensor* out);

/* How a GEMM expects a scale tensor: one scale per (gran_mn x gran_k) tile. */
typedef struct dg_sf_recipe {
  size_t struct_size;
  int32_t gran_mn;            /* 1 (per token) or 128 (per block) */
  int32_t gran_k;             /* 128 (SM90); 32 or 128 (SM100) */
  int32_t num_groups;         /* 0 = 2-D input; G >= 1 for a batched [G, ..] input */
  int32_t arch_major;         /* 9 (SM90) or 10 (SM100); 0 = the stream's device */
  int32_t disable_ue8m0_cast; /* SM100: keep FP32 instead of packing to UE8M0 */
} dg_sf_recipe;
#define DG_SF_RECIPE_INIT {sizeof(dg_sf_recipe), 1, 128, 0, 0, 0}

/* What dg_transform_sf_into_required_layout will produce for `sf` describing scales of an
 * [MN, K] operand: *out_is_input = 1 when the memory of `sf` already has the required layout (no
 * copy needed), else 0 and the dtype, sizes, strides and bytes of the buffer to pass as `out`.
 * The sizes and strides are those of the tensor DeepGEMM's function returns: for per-token FP32
 * scales (the dg_get_mn_major_tma_aligned_tensor layout) always (.., 1, align(MN, 4)) with batch
 * stride align(MN, 4) * SF_K, also when *out_is_input is 1 for an input whose strides differ only
 * along dimensions of size 1 (describing `sf` with them gives the same memory); for scales that
 * are only checked (SM90 per-block, SM100 packed) the input's own. `stream` is only read when
 * recipe->arch_major is 0. */
DG_API dg_status dg_transform_sf_layout(const dg_stream* stream, const dg_tensor* sf, int64_t mn, int64_t k,
                                        const dg_sf_recipe* recipe, int32_t* out_is_input,
                                        dg_dtype* out_dtype, int64_t* out_sizes, int64_t* out_strides,
                                        size_t* out_bytes);
/* Transforms `sf` into the layout the GEMMs need (DeepGEMM's transform_sf_into_required_layout):
 * SM90 FP32 per-token scales -> MN-major TMA-aligned; SM90 per-block scales -> checked only;
 * SM100 -> packed UE8M0 (unless disabled). When the input already has the layout, `out` may be
 * NULL and nothing runs. */
DG_API dg_status dg_transform_sf_into_required_layout(dg_stream* stream, const dg_tensor* sf, int64_t mn,
                                                      int64_t k, const dg_sf_recipe* recipe,
                                                      const dg_tensor* out);

/* ============================================================================================
 * Kernel preparation
 *
 * A kernel is compiled (or loaded from the disk cache) the first time a call needs it; threads
 * asking for it meanwhile wait for that build and share its result. A failed build (compile
 * error, missing compiler, full disk) gives every waiting thread its status and message and is
 * not remembered: the next call that needs the kernel tries again.
 * ========================================================================================== */

/* Number of kernels compiled or loaded by this process so far (memory-cache misses), for tests
 * and for checking that a warm-up covered a workload. */
DG_API dg_status dg_jit_get_stats(int64_t* compiled, int64_t* loaded_from_disk, int64_t* memory_hits);

/* ============================================================================================
 * GEMMs (SM90)
 * ========================================================================================== */

/* Dense GEMMs (docs/gemm.md), DeepGEMM's NT naming, all matrices 2-D:
 *   nt: a [M, K], b [N, K]     nn: a [M, K], b [K, N]
 *   tn: a [K, M], b [K, N]     tt: a [K, M], b [N, K]
 * D = alpha * (A @ Bᵀ) + beta * C, where A is the [M, K] view of a and B the [N, K] view of b.
 * Each view may be K-major or MN-major in memory (read from its strides; one stride must be 1 and
 * the other a multiple of 16 bytes, base 16-byte aligned; FP8 MN-major views need a workspace, see
 * dg_fp8_gemm_workspace_size). d: [M, N] row-major, BFLOAT16 or FLOAT32 (row stride a multiple of
 * 16 bytes). c: NULL, or [M, N] row-major with d's dtype; it may alias d
 * (same pointer and strides: beta = 1 is then plain accumulation). M == 0 or N == 0: nothing runs.
 * K == 0: D = beta * C, or zeros without c (on the device). Everything runs on the stream, with
 * no host synchronisation and no allocation (scratch memory is the caller's options.workspace), so
 * the calls can be captured in a CUDA graph once the kernels are loaded (see dg_gemm_prepare). */

/* FP8 scaling recipes (docs/gemm.md#fp8-scaling-factors). */
#define DG_FP8_RECIPE_1D2D 0 /* sfa per token x 128 K, sfb per 128 x 128 block (default) */
#define DG_FP8_RECIPE_1D1D 1 /* sfa and sfb per token x 128 K (weight gradient); d FLOAT32 */

/* Fused epilogues of the SM90 GEMMs (docs/gemm_epilogues.md): dense dg_bf16_gemm_* / dg_fp8_gemm_*
 * (1D2D recipe) and the M-grouped contiguous and masked calls, through options.epilogue. In order:
 *   v = alpha * (A.B^T)[row, col] + bias[col]     bias: dense calls only, BFLOAT16 or FLOAT32 [N]
 *   SwiGLU: d[row, j] = silu(v[gate j]) * v[up j], silu(x) = x / (1 + exp(-x)) (fast exp and
 *           reciprocal: 5 ulp, up to |x| ulp more for x < -1); D has N / 2 columns.
 *           B's rows alternate blocks of 128 gate rows and the 128 matching up rows (N % 256 == 0;
 *           dg_swiglu_interleave reorders [gate; up] weights and their 128 x 128 block scales).
 *   d FLOAT8_E4M3: per row and 128 columns of D, the scale and E4M3 codes of the quantization calls
 *           below (dg_quantize_fp8_per_token's numerics and d_scales layouts), computed from v
 *           rounded to BF16: codes and scales equal quantizing the same call's BF16 D bit for bit.
 *           The scale layout's padding rows (M .. align(M, 4) - 1) get 0. Rows of D that are no
 *           group's (contiguous padding, masked rows past masked_m) get codes 0 and scales 0 where
 *           a computed tile covers them and are not written where none does (as a BF16 D's rows).
 * Not with c (a C term), the 1D1D recipe, split_k > 1, K == 0 or DG_GEMM_KERNEL_SKINNY:
 * DG_ERROR_UNSUPPORTED naming the reason. Initialise with DG_GEMM_EPILOGUE_INIT. */
#define DG_ACTIVATION_NONE 0
#define DG_ACTIVATION_SWIGLU 1
typedef struct dg_gemm_epilogue {
  size_t struct_size;
  int32_t activation;        /* DG_ACTIVATION_NONE or DG_ACTIVATION_SWIGLU */
  const dg_tensor* bias;     /* NULL, or [N] (the GEMM's columns, before SwiGLU), stride 1, 8-byte aligned */
  const dg_tensor* d_scales; /* d FLOAT8_E4M3 only: FLOAT32 [(G,) M, ceil(N_d / 128)] in the layout
                                dg_get_mn_major_tma_aligned_tensor_layout gives (the sfa the FP8 GEMMs
                                read), or INT32 / UE8M0X4 packed as dg_quantize_fp8_per_token takes them;
                                G and M as d's (masked: [G, max_m, ...]) */
  int32_t pow2_scales;       /* FP32 scales rounded up to powers of two (packed scales always are) */
  float amax_floor;          /* 0 = 1e-4, else 1e-30 .. 1e30 (as dg_quant_options) */
} dg_gemm_epilogue;
#define DG_GEMM_EPILOGUE_INIT {sizeof(dg_gemm_epilogue), DG_ACTIVATION_NONE, NULL, NULL, 0, 0.0f}

/* Options of the GEMMs; initialise with DG_GEMM_OPTIONS_INIT. NULL options mean the defaults.
 * The kernel-config fields override the heuristic field by field (0 = heuristic); a combination
 * that cannot run the problem is DG_ERROR_INVALID_ARGUMENT naming the option. Fields are only
 * appended: a caller built against an older dg.h (a smaller struct_size) gets the defaults for the
 * fields it does not know. */
typedef struct dg_gemm_options {
  size_t struct_size;
  int32_t recipe;             /* FP8 only: DG_FP8_RECIPE_* */
  float alpha;
  float beta;                 /* read only when c is given */
  int32_t disable_ue8m0_cast; /* accepted for DeepGEMM parity; no effect on SM90 */
  int32_t block_m;            /* 64, 128 or 256; 32 for dense FP8 1D2D calls without a fused epilogue */
  int32_t block_n;            /* multiple of 16 (8 for FP32 d), up to 256 */
  int32_t num_stages;         /* shared-memory pipeline depth */
  int32_t cluster;            /* 1 or 2 CTAs (TMA multicast between the pair) */
  int32_t multicast_a;        /* cluster 2: 1 = the pair shares A, 0 = shares B, -1 = heuristic */
  int32_t num_math_warpgroups;/* 1 or 2 WGMMA warp-groups */
  int32_t num_sms;            /* SMs to use, at most the stream's cap; 0 = the cap */
  int32_t fp8_promotion;      /* FP8: DG_FP8_PROMOTION_*; 0 = heuristic */
  int32_t fp8_promotion_slices; /* FP8: column slices each K block is issued and promoted in: 1, 2 or 4; with
                                   128 rows per math warp-group (block_m 256), 2 without overlap means the two
                                   64-row halves instead; 0 = heuristic */
  int32_t split_k;            /* CTAs (a cluster) that share each tile's K blocks and sum their partial tiles
                                 through distributed shared memory: 1 (off), 2, 4 or 8; needs cluster 1;
                                 0 = heuristic (used for M <= 128 with few tiles). No workspace; deterministic.
                                 Masked M-grouped calls: 2 splits a last round that is at most half full over
                                 CTA pairs, as counted on the device; 1 never splits; 0 = where the
                                 heuristic's estimate over the spread of counts prices the split lower. */
  void* workspace;            /* FP8: device memory, 256-byte aligned, for K-major copies of operands that are
                                 MN-major in memory (dg_fp8_gemm_workspace_size gives the bytes); NULL = none.
                                 Used on the stream: do not reuse it before the call's work there is done, and
                                 do not let it overlap a, b, c or d. Ignored by BF16 calls and by FP8 calls
                                 whose operands are K-major. */
  size_t workspace_size;      /* bytes of workspace */
  int32_t kernel;             /* DG_GEMM_KERNEL_*: which kernel family runs the call; 0 = heuristic */
  const dg_gemm_epilogue* epilogue; /* NULL, or the fused epilogue (dense and M-grouped calls; see above) */
} dg_gemm_options;
#define DG_GEMM_OPTIONS_INIT \
  {sizeof(dg_gemm_options), DG_FP8_RECIPE_1D2D, 1.0f, 1.0f, 0, 0, 0, 0, 0, -1, 0, 0, 0, 0, 0, NULL, 0, 0, NULL}

/* Kernel families of the dense GEMMs (dg_gemm_options.kernel).
 * TILED: the persistent WGMMA kernel (block_m/n, stages, cluster, promotion and split_k options).
 * SKINNY: few tokens (M <= 32) streaming B once through warp-level MMAs; needs K-major A and B in
 *   memory after any FP8 workspace copy (for BF16: layouts nt, and tn/tt where M = 1) and rows of K
 *   a multiple of 16 bytes; it honours split_k (CTAs sharing each 16-row tile's K) and num_stages
 *   (128-byte units of each row in flight per warp, 1..8), not an SM cap. Forcing it on a problem it
 *   cannot run gives DG_ERROR_UNSUPPORTED with the reason.
 * AUTO (0) picks SKINNY where it can run, for M <= 16 (BF16; 8 on an H200) or <= 8 (FP8) with at most
 *   64 MB of B, when no tiled option is set and no SM cap applies; TILED otherwise. */
#define DG_GEMM_KERNEL_AUTO 0
#define DG_GEMM_KERNEL_TILED 1
#define DG_GEMM_KERNEL_SKINNY 2

/* How the FP8 kernels fold each 128-K block's tensor-core partial sums into the FP32 accumulators
 * (with the scales): after the block's WGMMAs complete, or while the next block's WGMMAs run (costs
 * a second set of partial-sum registers). */
#define DG_FP8_PROMOTION_AFTER 1
#define DG_FP8_PROMOTION_OVERLAP 2

/* BF16 GEMMs: a and b BFLOAT16, every layout runs natively. */
DG_API dg_status dg_bf16_gemm_nt(dg_stream* stream, const dg_tensor* a, const dg_tensor* b, const dg_tensor* d,
                                 const dg_tensor* c, const dg_gemm_options* options);
DG_API dg_status dg_bf16_gemm_nn(dg_stream* stream, const dg_tensor* a, const dg_tensor* b, const dg_tensor* d,
                                 const dg_tensor* c, const dg_gemm_options* options);
DG_API dg_status dg_bf16_gemm_tn(dg_stream* stream, const dg_tensor* a, const dg_tensor* b, const dg_tensor* d,
                                 const dg_tensor* c, const dg_gemm_options* options);
DG_API dg_status dg_bf16_gemm_tt(dg_stream* stream, const dg_tensor* a, const dg_tensor* b, const dg_tensor* d,
                                 const dg_tensor* c, const dg_gemm_options* options);

/* FP8 GEMMs: a and b FLOAT8_E4M3 with FLOAT32 scales, transposed together with their data:
 *   sfa: the [M, ceil(K/128)] view, MN-major TMA-aligned (stride 1 along M, a multiple of 4
 *        elements >= M along K blocks: dg_transform_sf_into_required_layout produces it);
 *   sfb: 1D2D: the [ceil(N/128), ceil(K/128)] view, any strides;
 *        1D1D: the [N, ceil(K/128)] view, MN-major TMA-aligned like sfa.
 * SM90 FP8 WGMMA reads K-major operands only: a view that is MN-major in memory (stride 1 along
 * M or N, K rows a multiple of 16 bytes apart, base 16-byte aligned; e.g. a of tn/tt, b of nn/tn
 * when contiguous) is first transposed on the stream into options.workspace, and the GEMM reads
 * that copy (its rows padded to 16 bytes, so any K works there). A K-major operand is read in
 * place: its rows must be a multiple of 16 bytes apart (K % 16 == 0 when contiguous), else the call
 * returns DG_ERROR_UNSUPPORTED. Without a workspace, a call with an MN-major operand returns
 * DG_ERROR_UNSUPPORTED naming the operand and the bytes needed; a workspace that is too small or
 * not 256-byte aligned gives DG_ERROR_INVALID_ARGUMENT. Other memory orders are DG_ERROR_UNSUPPORTED (one stride 1) or
 * DG_ERROR_INVALID_ARGUMENT. d: BFLOAT16 or FLOAT32 (1D2D), FLOAT32 (1D1D). */
DG_API dg_status dg_fp8_gemm_nt(dg_stream* stream, const dg_tensor* a, const dg_tensor* sfa, const dg_tensor* b,
                                const dg_tensor* sfb, const dg_tensor* d, const dg_tensor* c,
                                const dg_gemm_options* options);
DG_API dg_status dg_fp8_gemm_nn(dg_stream* stream, const dg_tensor* a, const dg_tensor* sfa, const dg_tensor* b,
                                const dg_tensor* sfb, const dg_tensor* d, const dg_tensor* c,
                                const dg_gemm_options* options);
DG_API dg_status dg_fp8_gemm_tn(dg_stream* stream, const dg_tensor* a, const dg_tensor* sfa, const dg_tensor* b,
                                const dg_tensor* sfb, const dg_tensor* d, const dg_tensor* c,
                                const dg_gemm_options* options);
DG_API dg_status dg_fp8_gemm_tt(dg_stream* stream, const dg_tensor* a, const dg_tensor* sfa, const dg_tensor* b,
                                const dg_tensor* sfb, const dg_tensor* d, const dg_tensor* c,
                                const dg_gemm_options* options);

/* Layouts of dg_gemm_prepare and dg_fp8_gemm_workspace_size. */
#define DG_GEMM_LAYOUT_NT 0
#define DG_GEMM_LAYOUT_NN 1
#define DG_GEMM_LAYOUT_TN 2
#define DG_GEMM_LAYOUT_TT 3

/* Bytes of options.workspace that dg_fp8_gemm_* need when a and b are stored as `layout` names them
 * (0 for NT): each operand stored [K, M] / [K, N] (a of TN/TT, b of NN/TN) is MN-major and gets a
 * K-major copy with rows align(K, 16) bytes apart, taking align(rows * align(K, 16), 256) bytes:
 * a's [M, K] copy at offset 0, then b's [N, K] copy. 0 when M, N or K is 0. (A contiguous single
 * row, M or N = 1, is K-major as well and not copied; the size counts it anyway.) Views need the
 * size of the layout with their memory orders: an nt call on MN-major views of both operands needs
 * the TN size. m, n, k in [0, 2^31). */
DG_API dg_status dg_fp8_gemm_workspace_size(int32_t layout, int64_t m, int64_t n, int64_t k, size_t* bytes);

/* Compiles and loads (no launch, no device memory touched) every kernel the matching call would
 * use, for contiguous a and b in `layout`: ab_dtype BFLOAT16 or FLOAT8_E4M3 (recipe from options;
 * FP8 layouts other than NT load the transpose kernel too), d_dtype BFLOAT16 or FLOAT32 (or
 * FLOAT8_E4M3 with options.epilogue.d_scales), with_c 1 when a C term will be given (with C == D
 * and beta == 1 the pre-pass kernel is loaded too, unused). options.workspace is not read;
 * options.epilogue is checked as the call checks it, its tensors' descriptors (shape, dtype) but
 * not their data. Call it before capturing a CUDA graph. */
DG_API dg_status dg_gemm_prepare(dg_stream* stream, dg_dtype ab_dtype, int32_t layout, int64_t m, int64_t n, int64_t k,
                                 dg_dtype d_dtype, int32_t with_c, const dg_gemm_options* options);

/* ============================================================================================
 * FP8 GEMM that skips the middle columns of each head (docs/skip_head_mid.md)
 *
 * DeepGEMM's fp8_gemm_nt_skip_head_mid: the GEMM's N columns are heads of left + right columns
 * and D's heads are left + mid + right wide; GEMM column n = h * (left + right) + o is written to
 * D's column h * (left + mid + right) + (o < left ? o : o + mid), by the GEMM's own store: the mid
 * columns of every head are never written (they keep whatever they held).
 *   a, sfa, b, sfb: as dg_fp8_gemm_nt with the 1D2D recipe (a [M, K], b [N, K] FLOAT8_E4M3; FP32
 *      sfa [M, ceil(K/128)] MN-major TMA-aligned, sfb [ceil(N/128), ceil(K/128)]).
 *   d: [M, (N / (left + right)) * (left + mid + right)] row-major BFLOAT16 or FLOAT32, row stride
 *      a multiple of 16 bytes (columns below 2^31).
 *   left, mid, right: >= 0 with left + right > 0 dividing N (else DG_ERROR_INVALID_ARGUMENT).
 *      Where left and right are multiples of 16 columns for a BFLOAT16 d (8 for FLOAT32) the store
 *      writes TMA boxes that lie within one head's left or right columns (as fast as the plain
 *      GEMM); other values are stored element by element from registers (slower). Any mid.
 *   options: dg_gemm_options with alpha, the tile overrides and a workspace for MN-major operand
 *      views as for dg_fp8_gemm_nt; the 1D1D recipe, options.epilogue, split_k > 1 and the skinny
 *      kernel do not apply (DG_ERROR_UNSUPPORTED, or DG_ERROR_INVALID_ARGUMENT for an explicit
 *      split_k). K == 0 is DG_ERROR_UNSUPPORTED; M == 0 or N == 0: nothing runs.
 * On any error nothing is written. Runs on the stream with no host synchronisation. */
DG_API dg_status dg_fp8_gemm_nt_skip_head_mid(dg_stream* stream, const dg_tensor* a, const dg_tensor* sfa,
                                              const dg_tensor* b, const dg_tensor* sfb, const dg_tensor* d,
                                              int64_t left, int64_t mid, int64_t right,
                                              const dg_gemm_options* options);

/* ============================================================================================
 * M-grouped GEMMs (MoE experts; docs/m_grouped_gemm.md)
 *
 * G problems that share N and K: D[rows of g] = alpha * A[rows of g] @ B[g]ᵀ, D BFLOAT16. A's rows
 * are either concatenated over the groups (contiguous) or a fixed max_m rows per group of which a
 * device-side count is valid (masked). B is [G, N, K] (nt) or [G, K, N] (nn, BF16 only on SM90)
 * with packed groups. FP8 calls use the 1D2D recipe: sfa per token x 128 K (MN-major TMA-aligned,
 * as for the dense GEMMs; batched for masked), sfb [G, ceil(N/128), ceil(K/128)] FP32 with any
 * strides (4-byte aligned). Options: dg_gemm_options with alpha, the tile overrides (block_m,
 * block_n, num_stages, num_math_warpgroups, num_sms, fp8_promotion, fp8_promotion_slices) and
 * cluster 2 with multicast_a 0 (CTA pairs along M that load a shared B tile once), split_k for
 * masked calls; C, beta, the 1D1D recipe, multicast of A, split_k for contiguous calls, a workspace
 * and the skinny kernel do not apply (a non-default value is DG_ERROR_INVALID_ARGUMENT naming the
 * field). Everything runs on the stream with no host synchronisation and no read of device-side
 * group data by the host: the calls can be captured in
 * a CUDA graph once their kernel is loaded (dg_m_grouped_gemm_prepare, or one call before capture).
 * Group data the host cannot check is made safe on the device, never read or written out of bounds
 * (see each layout). Operands: a and b 16-byte aligned, rows a multiple of 16 bytes apart
 * (FP8 K % 16 == 0, BF16 K % 8 == 0; nn: N % 8 == 0 and K % 64 == 0), d row-major with N % 8 == 0.
 * ========================================================================================== */

/* How the group tensor of a contiguous call describes the groups. */
#define DG_M_GROUPED_LAYOUT_INDICES 0 /* INT32 [M]: each row's group in [0, G), -1 for a padding row */
#define DG_M_GROUPED_LAYOUT_PSUM 1    /* INT32 [G]: each group's end row (exclusive, a prefix sum) */
#define DG_M_GROUPED_LAYOUT_MASKED 2  /* (dg_m_grouped_gemm_prepare only) the masked calls */

/* Contiguous layout. a [M, K] (K-major), d [M, N]; grouped_layout INT32, contiguous, as `layout` says:
 *   DG_M_GROUPED_LAYOUT_INDICES: [M], M a multiple of dg_get_mk_alignment_for_contiguous_layout()
 *     (128); each group's rows start at a multiple of 128 and are padded to one with -1 rows. A
 *     128-row block takes the group of its first row: a block whose first entry is outside [0, G)
 *     is skipped (its D rows are not written); rows of a computed block whose entry differs from
 *     the block's group (the -1 padding) are written as zeros.
 *   DG_M_GROUPED_LAYOUT_PSUM: [G], entry g = the end row of group g; group g starts at entry g-1
 *     aligned up to 128 (group 0 at row 0). Rows between a group's end and the next start are
 *     written as zeros when they share a 128-row block with the group, rows past the last block
 *     are not written. Entries are read as a running maximum clamped to [0, M] (a decreasing or
 *     too large entry gives empty or clipped groups, never overlapping ones). G <= 1024.
 * expected_m: rows per group the heuristic plans for (a hint); 0 = M / G. */
DG_API dg_status dg_m_grouped_fp8_gemm_nt_contiguous(dg_stream* stream, const dg_tensor* a, const dg_tensor* sfa,
                                                     const dg_tensor* b, const dg_tensor* sfb, const dg_tensor* d,
                                                     const dg_tensor* grouped_layout, int32_t layout, int64_t expected_m,
                                                     const dg_gemm_options* options);
/* b [G, K, N]: SM90 FP8 WGMMA needs K-major B, so this runs only when b's [N, K] views are K-major
 * in memory (else DG_ERROR_UNSUPPORTED; store B as [G, N, K] and call the nt form). */
DG_API dg_status dg_m_grouped_fp8_gemm_nn_contiguous(dg_stream* stream, const dg_tensor* a, const dg_tensor* sfa,
                                                     const dg_tensor* b, const dg_tensor* sfb, const dg_tensor* d,
                                                     const dg_tensor* grouped_layout, int32_t layout, int64_t expected_m,
                                                     const dg_gemm_options* options);
DG_API dg_status dg_m_grouped_bf16_gemm_nt_contiguous(dg_stream* stream, const dg_tensor* a, const dg_tensor* b,
                                                      const dg_tensor* d, const dg_tensor* grouped_layout, int32_t layout,
                                                      int64_t expected_m, const dg_gemm_options* options);
DG_API dg_status dg_m_grouped_bf16_gemm_nn_contiguous(dg_stream* stream, const dg_tensor* a, const dg_tensor* b,
                                                      const dg_tensor* d, const dg_tensor* grouped_layout, int32_t layout,
                                                      int64_t expected_m, const dg_gemm_options* options);

/* Masked layout. a [G, max_m, K], d [G, max_m, N], b [G, N, K]; FP8 sfa [G, max_m, ceil(K/128)]
 * with strides (align(max_m, 4) * ceil(K/128), 1, align(max_m, 4)) (dg_transform_sf_into_required_layout
 * with num_groups = G produces it). masked_m INT32 [G] in device memory: group g's first
 * clamp(masked_m[g], 0, max_m) rows are computed; D rows past them are written as zeros up to the
 * end of their tile, later rows are not written. max_m a multiple of 64; G <= 1024.
 * expected_m (> 0): the rows per group the heuristic plans for, e.g. the mean of masked_m. The
 * tiles are counted on the device; with options.split_k 2 a last round of tiles that would leave at
 * least half of the SMs idle is split along K over pairs of CTAs (summed through distributed shared
 * memory, deterministic); 1 never splits; 0 (default) splits where the heuristic prices it lower. */
DG_API dg_status dg_m_grouped_fp8_gemm_nt_masked(dg_stream* stream, const dg_tensor* a, const dg_tensor* sfa,
                                                 const dg_tensor* b, const dg_tensor* sfb, const dg_tensor* d,
                                                 const dg_tensor* masked_m, int64_t expected_m,
                                                 const dg_gemm_options* options);
DG_API dg_status dg_m_grouped_bf16_gemm_nt_masked(dg_stream* stream, const dg_tensor* a, const dg_tensor* b,
                                                  const dg_tensor* d, const dg_tensor* masked_m, int64_t expected_m,
                                                  const dg_gemm_options* options);

/* Compiles and loads (no launch, no device memory touched) the kernel that the matching M-grouped
 * call would use: ab_dtype BFLOAT16 or FLOAT8_E4M3, gemm_layout DG_GEMM_LAYOUT_NT or _NN (contiguous
 * a and b), `grouping` a DG_M_GROUPED_LAYOUT_*, num_groups G, m the rows of A (contiguous) or
 * max_m (masked), n, k and expected_m as the call will pass them. d is BFLOAT16, or FLOAT8_E4M3
 * when options.epilogue has d_scales; the epilogue is checked as the call checks it (descriptors,
 * not data). Call it before capturing a graph. */
DG_API dg_status dg_m_grouped_gemm_prepare(dg_stream* stream, dg_dtype ab_dtype, int32_t gemm_layout, int32_t grouping,
                                           int64_t num_groups, int64_t m, int64_t n, int64_t k, int64_t expected_m,
                                           const dg_gemm_options* options);

/* ============================================================================================
 * K-grouped GEMMs (MoE weight gradient; docs/k_grouped_gemm.md)
 *
 * G problems that share M and N, each over its own slice of K (the tokens routed to one expert):
 *   D[g] = alpha * A_g @ B_gᵀ + beta * C[g],   A_g [M, k_g] and B_g [N, k_g] in GEMM terms,
 * where k_g = ks[g] and K = k_0 + ... + k_{G-1}. ks: a host array of num_groups entries, each >= 0
 * and a multiple of 128 (dg_get_mk_alignment_for_contiguous_layout()), K below 2^31. Group g's
 * slice of K is [k_0 + ... + k_{g-1}, + k_g) of the operands' K (and of the scales' K blocks).
 * d FLOAT32 [G, M, N] contiguous (N % 4 == 0, 16-byte aligned); c NULL or FLOAT32 [G, M, N]
 * contiguous, or d itself with beta 1 (D += ..., no copy). A group with k_g = 0 gets
 * D[g] = beta * C[g] (zeros without C). ks_tensor: NULL or the INT32 [G] device copy of ks that
 * DeepGEMM's API takes; its shape and dtype are checked, and nothing reads it: the launch is built
 * from the host ks, so a captured CUDA graph replays the ks it was captured with.
 * FP8 calls use the 1D1D recipe (options.recipe 0 or DG_FP8_RECIPE_1D1D): sfa FLOAT32 [M, K / 128]
 * per token x 128 K and sfb [N, K / 128], each MN-major TMA-aligned (strides (1, align(M or N, 4)),
 * as dg_transform_sf_into_required_layout makes them), the groups' K blocks concatenated.
 * Options: alpha, beta, block_m (64 or 128), block_n, num_stages, num_math_warpgroups, num_sms,
 * fp8_promotion and fp8_promotion_slices; cluster 2, multicast_a, split_k and the skinny kernel do
 * not apply (a non-default value is DG_ERROR_INVALID_ARGUMENT naming the field). Launches of more
 * than 32 non-empty groups are split into several kernels of 32 groups (no host synchronisation).
 * ========================================================================================== */

/* a FLOAT8_E4M3 [M * K] (rank 1): group g's [M, k_g] matrix row-major (K-major) at element
 * M * (k_0 + ... + k_{g-1}); b FLOAT8_E4M3 [N * K] likewise with N. 16-byte aligned. */
DG_API dg_status dg_k_grouped_fp8_gemm_nt_contiguous(dg_stream* stream, const dg_tensor* a, const dg_tensor* sfa,
                                                     const dg_tensor* b, const dg_tensor* sfb, const dg_tensor* d,
                                                     const dg_tensor* c, const int64_t* ks, int64_t num_groups,
                                                     const dg_tensor* ks_tensor, const dg_gemm_options* options);
/* a FLOAT8_E4M3 [K, M] and b [K, N] (stride 1 along M / N, rows a multiple of 16 bytes apart): group
 * g is rows [k_0 + ... + k_{g-1}, + k_g). SM90 FP8 WGMMA reads K-major operands, so both are first
 * transposed on the stream into options.workspace: dg_fp8_gemm_workspace_size(DG_GEMM_LAYOUT_TN, M,
 * N, K) bytes, 256-byte aligned (without it the call returns DG_ERROR_UNSUPPORTED naming the size). */
DG_API dg_status dg_k_grouped_fp8_gemm_tn_contiguous(dg_stream* stream, const dg_tensor* a, const dg_tensor* sfa,
                                                     const dg_tensor* b, const dg_tensor* sfb, const dg_tensor* d,
                                                     const dg_tensor* c, const int64_t* ks, int64_t num_groups,
                                                     const dg_tensor* ks_tensor, const dg_gemm_options* options);
/* a BFLOAT16 [K, M] and b [K, N] (stride 1 along M / N, rows a multiple of 16 bytes apart), read in
 * place: group g is rows [k_0 + ... + k_{g-1}, + k_g). */
DG_API dg_status dg_k_grouped_bf16_gemm_tn_contiguous(dg_stream* stream, const dg_tensor* a, const dg_tensor* b,
                                                      const dg_tensor* d, const dg_tensor* c, const int64_t* ks,
                                                      int64_t num_groups, const dg_tensor* ks_tensor,
                                                      const dg_gemm_options* options);

/* Compiles and loads (no launch, no device memory touched) the kernels that the matching K-grouped
 * call would use: ab_dtype FLOAT8_E4M3 with layout DG_GEMM_LAYOUT_NT or _TN, or BFLOAT16 with _TN;
 * m, n, the call's ks and num_groups; with_c 1 when c will be given. Call it before capturing a
 * CUDA graph. */
DG_API dg_status dg_k_grouped_gemm_prepare(dg_stream* stream, dg_dtype ab_dtype, int32_t layout, int64_t m, int64_t n,
                                           const int64_t* ks, int64_t num_groups, int32_t with_c,
                                           const dg_gemm_options* options);

/* ============================================================================================
 * Einsum (DeepGEMM's einsum forms; docs/einsum.md)
 *
 * Three fixed contractions of BFLOAT16 operands, each one launch of the SM90 GEMM kernel that reads
 * the operands in place through 3-D TMA maps (no copies; strided views such as y[:, :, :r] of a
 * wider tensor are read as they are):
 *   "bmk,bnk->mn"   d[m, n] = c[m, n] + sum over b, k of a[b, m, k] b[b, n, k]
 *                   a [s, m, k], b [s, n, k], d FLOAT32 [m, n]; c NULL (d = the sum), FLOAT32 [m, n],
 *                   or d itself (d += the sum; same data and strides). The (b, k) blocks are split
 *                   over the SMs and every split adds its partial tile into d in FP32, so the order
 *                   of the additions, and the last bits of d, vary from run to run.
 *   "bhr,hdr->bhd"  d[b, h, d] = sum over r of a[b, h, r] b[h, d, r]   (MLA weight absorption)
 *   "bhd,hdr->bhr"  d[b, h, r] = sum over d of a[b, h, d] b[h, d, r]
 *                   a, b and d BFLOAT16 rank 3 (d BFLOAT16: FP32 accumulation, one rounding); c NULL.
 * expr: one of these strings (spaces ignored); any other is DG_ERROR_UNSUPPORTED naming the three.
 * Every tensor has stride 1 in its last dimension and its other strides positive multiples of 16
 * bytes where the dimension's size exceeds 1 (TMA), data 16-byte aligned; any such strides and
 * order (DG_ERROR_UNSUPPORTED otherwise). d must not overlap itself (checked), a or b. Sizes below 2^31;
 * empty outputs return at once; an empty sum (k, r or d = 0, or s = 0) writes c or zeros.
 * Options: NULL, or block_m, block_n, num_stages, num_math_warpgroups, cluster, multicast_a and
 * num_sms; alpha and beta 1, split_k 0 or 1, kernel AUTO or TILED, no FP8 fields, workspace or
 * epilogue (DG_ERROR_INVALID_ARGUMENT naming the field). The tile fields are of the call's own
 * orientation. A per-head call of at most 32 rows (b), a contraction of at most 512 and at least 64
 * output columns per head runs with its operands swapped (docs/einsum.md#few-rows-per-head) unless
 * block_m, block_n, num_math_warpgroups, cluster or multicast_a is set. SM90 only.
 * ========================================================================================== */
DG_API dg_status dg_bf16_einsum(dg_stream* stream, const char* expr, const dg_tensor* a, const dg_tensor* b,
                                const dg_tensor* d, const dg_tensor* c, const dg_gemm_options* options);

/* Compiles and loads (no launch, no device memory touched) the kernels that dg_bf16_einsum would use
 * for expr with operands of a's sizes a_sizes[3] and b's sizes b_sizes[3]; with_c 1 when c will be
 * given ("bmk,bnk->mn" only). Call it before capturing a CUDA graph. */
DG_API dg_status dg_bf16_einsum_prepare(dg_stream* stream, const char* expr, const int64_t* a_sizes,
                                        const int64_t* b_sizes, int32_t with_c, const dg_gemm_options* options);

/* ============================================================================================
 * FP8 einsum (DeepGEMM's fp8_einsum on SM90; docs/einsum.md#fp8)
 *
 *   "bhr,hdr->bhd"  d[b, h, d] = sum over r of (sfa[b, h, r / 128] a[b, h, r]) (sfb[h, d / 128, r / 128] b[h, d, r])
 * One launch of the SM90 FP8 GEMM kernel, per head h D_h [b, d] = A_h [b, r] . B_h^T with DeepGEMM's
 * 1D2D recipe (1, 128, 128): FP32 products of the E4M3 codes, each 128-wide block of r scaled by its
 * sfa and sfb and summed in FP32; d BFLOAT16, rounded once.
 *   a: FLOAT8_E4M3 [b, h, r]; b: FLOAT8_E4M3 [h, d, r]; d: BFLOAT16 [b, h, d]. Strides as for
 *      dg_bf16_einsum: 1 in the last dimension, the others positive multiples of 16 bytes where the
 *      dimension's size exceeds 1, data 16-byte aligned (DG_ERROR_UNSUPPORTED otherwise); views are
 *      read in place. d must not overlap itself (checked), a or b.
 *   sfa: FLOAT32 [b, h, ceil(r / 128)], one scale per token, head and 128 elements of r, MN-major and
 *      TMA-aligned per head: strides (1, ceil(r / 128) * L, L) with L a multiple of 4 and >= b (the
 *      [h, b, ceil(r / 128)] view in the layout dg_get_mn_major_tma_aligned_tensor gives, L = align(b, 4);
 *      dg_transform_sf_into_required_layout with num_groups h makes it), 16-byte aligned.
 *   sfb: FLOAT32 [h, ceil(d / 128), ceil(r / 128)], one scale per head and 128 x 128 block, any strides,
 *      4-byte aligned.
 *   c: NULL (DeepGEMM's SM90 path has no accumulation: anything else is DG_ERROR_UNSUPPORTED).
 * expr: "bhr,hdr->bhd" (spaces ignored); DeepGEMM's SM100-only FP8 forms "bhd,hdr->bhr" and
 * "bhd,bhr->hdr", and any other expression, are DG_ERROR_UNSUPPORTED. A FLOAT32 d is DG_ERROR_UNSUPPORTED.
 * Sizes below 2^31; empty outputs return at once; r = 0 writes zeros.
 * Options: NULL, or as for dg_bf16_einsum plus fp8_promotion and fp8_promotion_slices; recipe
 * DG_FP8_RECIPE_1D2D (DG_FP8_RECIPE_1D1D is DG_ERROR_UNSUPPORTED); disable_ue8m0_cast has no effect.
 * SM90 only.
 * ========================================================================================== */
DG_API dg_status dg_fp8_einsum(dg_stream* stream, const char* expr, const dg_tensor* a, const dg_tensor* sfa,
                               const dg_tensor* b, const dg_tensor* sfb, const dg_tensor* d, const dg_tensor* c,
                               const dg_gemm_options* options);

/* Compiles and loads (no launch, no device memory touched) the kernels that dg_fp8_einsum would use
 * for expr with a's sizes a_sizes[3] = {b, h, r} and b's sizes b_sizes[3] = {h, d, r}; with_c must be
 * 0 (1 is DG_ERROR_UNSUPPORTED, as c is). Call it before capturing a CUDA graph. */
DG_API dg_status dg_fp8_einsum_prepare(dg_stream* stream, const char* expr, const int64_t* a_sizes,
                                       const int64_t* b_sizes, int32_t with_c, const dg_gemm_options* options);

/* ============================================================================================
 * GEMM tuning (docs/tuning.md)
 *
 * dg_tune times the heuristic's best-ranked kernel configs of each problem of a list on the
 * stream's GPU and writes each problem's fastest into a tuning table: a small versioned text file
 * keyed by GPU name, SM count and libdg version (by default beside the JIT cache, see
 * DG_CONFIG_TUNING_TABLE). GEMM calls consult the table the first time they see a problem (the
 * warm path is unchanged): a tuned problem, or one whose M (rows per group for M-grouped calls)
 * is within a factor of 1.5 of a tuned one with the same N, K, G, dtypes, layout, call family and
 * fused epilogue (problem lists name it: epilogue=swiglu, fp8 or swiglu_fp8; K-grouped calls: the
 * same M and N, and mean K and count of non-empty groups each within the factor),
 * runs the tuned config, unless the call sets kernel-config options (they always win) or caps the
 * SMs; an entry that is the heuristic's own config runs as the heuristic has it (a masked call's
 * count-adaptive tile widths included). Other problems keep the heuristic's choice.
 * ========================================================================================== */

/* Progress of dg_tune, on the calling thread, with the problems done, their total and a line for
 * people valid only during the call: once before compiling (done 0), after each problem ("[3/84]
 * dense fp8 nt m=4096 n=24576 k=1536: 128x192 ... 412.1 us; heuristic ... 418.0 us (+1.4%)"), and
 * once after writing the table (done = total, "wrote PATH (N tuned problems)"). It must not call
 * dg_tune. */
typedef void (*dg_tune_progress)(int64_t done, int64_t total, const char* line, void* user_data);

/* Options of dg_tune; initialise with DG_TUNE_OPTIONS_INIT. NULL options mean the defaults. */
typedef struct dg_tune_options {
  size_t struct_size;
  int32_t candidates;     /* configs timed per problem, the heuristic's own first: 1..16; 0 = 4 */
  int32_t repetitions;    /* timed runs of each candidate (medians taken): 1..100; 0 = 7 */
  const char* table_path; /* the table file to write; NULL or "" = the stream's table (the config's
                             DG_CONFIG_TUNING_TABLE, else beside the JIT cache) */
  int32_t replace;        /* 0 = keep the entries of an existing table (same GPU, SM count and libdg
                             version) for problems not in this list; 1 = write only this list's */
  dg_tune_progress progress; /* NULL = none (each problem's line is logged at info level) */
  void* user_data;        /* passed to progress */
} dg_tune_options;
#define DG_TUNE_OPTIONS_INIT {sizeof(dg_tune_options), 0, 0, NULL, 0, NULL, NULL}

/* Tunes the problems of `problems`, the NUL-terminated text of a problem list (docs/tuning.md
 * #problem-lists), e.g. "dense fp8 nt n=24576 k=1536 m=128,4096\nmasked fp8 g=32 n=4096 k=7168
 * m=8,64\n", on the stream's device, and writes the table (atomically: a temporary file renamed
 * into place; its directory is created when missing). Each candidate runs on random non-zero
 * inputs, the heuristic's as an untuned call runs it (no table read); the runs alternate between
 * the candidates, each timed with CUDA events on the stream after a read of twice the L2 size,
 * and the lowest median wins where it is at least 1% below the heuristic's choice's, else the
 * heuristic's choice stays (masked problems: timed on 8 samples of group counts spread around the
 * list's m, contiguous ones on 4 samples of unequal groups, the means of the samples' medians,
 * since their counts vary from call to call; there the lead must also be at least twice the
 * standard error of the candidate's per-sample leads). The device memory the largest problem needs is allocated for the call and freed before it returns; the stream is synchronised.
 * *num_tuned (may be NULL): the problems tuned. Errors, with nothing written: a malformed list
 * (DG_ERROR_INVALID_ARGUMENT naming the line), options out of range, no table path, a stream with
 * an SM cap (tables are tuned on all SMs) or an offline stream (DG_ERROR_NO_DEVICE), a device that
 * is not SM90 (DG_ERROR_UNSUPPORTED), a table path that cannot be written. Mostly compile time:
 * DeepSeek-V3's list (tools/problems/deepseek-v3.txt, 81 problems) is estimated at under a minute
 * on an H200 host with a cold JIT cache, seconds with a warm one (docs/tuning.md#how-dg_tune-times). */
DG_API dg_status dg_tune(dg_stream* stream, const char* problems, const dg_tune_options* options, int64_t* num_tuned);

/* Compiles into the JIT cache (on a GPU stream also loads) the kernels that the calls of every
 * problem of `problems` (a problem list, as dg_tune reads it) run on `stream` with default options:
 * the stream's tuning table's config for a tuned problem, else the heuristic's (with the kernels a
 * call runs before its GEMM, e.g. an FP8 epilogue's). Nothing is timed or written but cache files.
 * On an offline stream for the target GPU (dg_stream_create_offline_named, with the GPU's table at
 * the config's DG_CONFIG_TUNING_TABLE) this warms a cache ahead of time, e.g. while building a
 * container; on a GPU stream it warms the process before serving. Compiles on up to 16 threads.
 * *num_prepared (may be NULL): the problems prepared. Errors: a malformed list
 * (DG_ERROR_INVALID_ARGUMENT naming the line), a problem the GEMMs cannot run (the line and the
 * reason), a failed compile (DG_ERROR_COMPILE); kernels compiled before the error stay cached. */
DG_API dg_status dg_prepare_problems(dg_stream* stream, const char* problems, int64_t* num_prepared);

/* ============================================================================================
 * FP8 quantization (docs/quantization.md)
 *
 * BF16 or FP32 values -> E4M3 codes and one FP32 scale per group of 128 consecutive elements along
 * K, written directly in the layouts the FP8 GEMMs read, so no transform runs in between. For each
 * group, in FP32 with every rounding to nearest even:
 *   amax  = the largest |x| of its elements, a NaN counting as larger than +inf;
 *   scale = max(amax, amax_floor) / 448 (448: the largest E4M3 value); with pow2 scales, then
 *           rounded up to a power of two (representable as UE8M0, DeepSeek-V3's scale format);
 *   code  = E4M3(x * (1 / scale)), the reciprocal and the product each rounded to FP32, the
 *           conversion saturating at +-448.
 * code * scale is then x to E4M3 precision (3 mantissa bits; values below 2^-9 * scale are lost to
 * E4M3's subnormals). An all-zero group gets codes 0 and scale amax_floor / 448.
 * Non-finite inputs are never hidden: a group holding a NaN gets scale NaN and every code NaN; a
 * group holding an inf (and no NaN) gets scale +inf, code NaN for its infs and +-0 for its finite
 * elements. A GEMM that reads such a group gives non-finite values in that row.
 * Tails: K need not be a multiple of 128 (nor of 16); the last group holds the K % 128 remaining
 * elements, amax over those only; the per-block form's last 128-row block likewise.
 * The same arithmetic is in templates/include/dg/quant.cuh, for kernels that must match it bit for
 * bit. Every call runs on the stream with no host synchronisation and no allocation; it can be
 * captured in a CUDA graph once its kernel is loaded (one call before capture). 16-byte aligned
 * x and out whose rows are 16-byte multiples apart, with K (MN for the MN-major form) a multiple
 * of 16, take the 16-byte path; other layouts are quantized element by element, slower.
 * ========================================================================================== */

/* Options of the quantization calls; initialise with DG_QUANT_OPTIONS_INIT. NULL means the
 * defaults (FP32 scales as computed, amax floor 1e-4). */
typedef struct dg_quant_options {
  size_t struct_size;
  int32_t pow2_scales; /* 1: scales rounded up to powers of two (UE8M0 values); packed sf implies it */
  float amax_floor;    /* amax is clamped to at least this; 0 = 1e-4 (as DeepGEMM's tests); else
                          1e-30 .. 1e30 (engines use e.g. 1e-10) */
} dg_quant_options;
#define DG_QUANT_OPTIONS_INIT {sizeof(dg_quant_options), 0, 0.0f}

/* Per-token 1 x 128 quantization: the A operand of dg_fp8_gemm_* (and of the masked and other
 * batched GEMMs), per (row, 128 K).
 *   x    BFLOAT16 or FLOAT32 [M, K], or [G, M, K] (G matrices, e.g. a batch), stride 1 along K,
 *        other strides free; element-aligned;
 *   out  FLOAT8_E4M3 with x's sizes, stride 1 along K, rows not overlapping;
 *   sf   FLOAT32 [(G,) M, ceil(K/128)] in the layout dg_get_mn_major_tma_aligned_tensor_layout
 *        gives (stride 1 along M, K blocks align(M, 4) apart): the sfa the SM90 FP8 GEMMs read;
 *        or INT32 / UE8M0X4 [(G,) M, ceil(K/512)] in dg_get_mn_major_tma_aligned_packed_ue8m0_tensor_layout's
 *        layout: four UE8M0 codes per word, the first K block in the low byte, codes past the
 *        last K block 0 (the SM100 form; libdg's SM90 GEMMs read FP32 scales, so use pow2_scales
 *        for UE8M0 numerics on SM90). 16-byte aligned. Rows M .. align(M, 4) - 1 of the layout's
 *        padding are written as 0.
 * M, K or G = 0: nothing runs. */
DG_API dg_status dg_quantize_fp8_per_token(dg_stream* stream, const dg_tensor* x, const dg_tensor* out,
                                           const dg_tensor* sf, const dg_quant_options* options);

/* Per-token quantization of the A operand of dg_m_grouped_fp8_gemm_nt_contiguous: x [M, K], out
 * and sf as in dg_quantize_fp8_per_token, grouped_layout and `layout` as that GEMM takes them
 * (DG_M_GROUPED_LAYOUT_INDICES: INT32 [M]; DG_M_GROUPED_LAYOUT_PSUM: INT32 [num_groups], read as
 * that GEMM reads them: ends clamped to [0, M] as a running maximum, each group starting at its
 * predecessor's end aligned up to 128), num_groups G >= 1. A row that belongs to no group (an
 * index outside [0, G), or outside every psum group) is padding: x's values there are not used
 * (whatever they hold, NaN included; the kernel may load them, uninitialised memory included, so
 * that a row's load overlaps its group lookup); its codes are written as 0 and its scales as 0
 * (packed: code 0), so the GEMM reads defined data. The groups are read on the device only. */
DG_API dg_status dg_quantize_fp8_per_token_contiguous(dg_stream* stream, const dg_tensor* x, const dg_tensor* out,
                                                      const dg_tensor* sf, const dg_tensor* grouped_layout,
                                                      int32_t layout, int64_t num_groups,
                                                      const dg_quant_options* options);

/* Per-token quantization of the A operand of dg_m_grouped_fp8_gemm_nt_masked: x [G, max_m, K],
 * out [G, max_m, K], sf as in dg_quantize_fp8_per_token for [G, max_m, ceil(K/128)] (the batched
 * layout that GEMM reads), masked_m INT32 [G] in device memory, read on the device only (no host
 * read: the call can be captured in a CUDA graph and replayed with new counts). Rows r >=
 * clamp(masked_m[g], 0, max_m) of group g are neither read nor written, codes and scales alike
 * (the masked GEMMs zero those rows of D whatever they hold), and cost nothing: a grid sized for
 * the device walks the valid rows. G at most 1024 (as the masked GEMMs; else DG_ERROR_UNSUPPORTED). */
DG_API dg_status dg_quantize_fp8_per_token_masked(dg_stream* stream, const dg_tensor* x, const dg_tensor* out,
                                                  const dg_tensor* sf, const dg_tensor* masked_m,
                                                  const dg_quant_options* options);

/* Per-block 128 x 128 quantization of weights, the B operand of the 1D2D recipe: one scale per
 * block of 128 rows x 128 K, amax over the whole block.
 *   x    BFLOAT16 or FLOAT32 [N, K] or [G, N, K] (M-grouped weights), stride 1 along K;
 *   out  FLOAT8_E4M3 with x's sizes, stride 1 along K;
 *   sf   FLOAT32 [(G,) ceil(N/128), ceil(K/128)] contiguous row-major (the sfb of dg_fp8_gemm_* and
 *        the M-grouped GEMMs), 4-byte aligned.
 * Last blocks along N or K hold the remaining rows / columns. */
DG_API dg_status dg_quantize_fp8_per_block(dg_stream* stream, const dg_tensor* x, const dg_tensor* out,
                                           const dg_tensor* sf, const dg_quant_options* options);

/* MN-major 1 x 128 quantization, for operands stored [K, MN] (stride 1 along MN) whose groups run
 * along K: per (MN index, 128 K). The weight-gradient form: x the activations or output gradients
 * [tokens, features], the a / b of dg_k_grouped_fp8_gemm_tn_contiguous and of the 1D1D tn GEMM.
 *   x    BFLOAT16 or FLOAT32 [K, MN], stride 1 along MN;
 *   out  FLOAT8_E4M3 [K, MN], stride 1 along MN (the GEMMs' a / b as they are stored);
 *   sf   FLOAT32 [MN, ceil(K/128)] in the layout dg_get_mn_major_tma_aligned_tensor_layout gives
 *        (the sfa / sfb the K-grouped and 1D1D GEMMs read), 16-byte aligned.
 * For the K-grouped GEMMs each group's K is a multiple of 128, so the groups' 128-row blocks are
 * those of the concatenated K: quantize the whole [sum(ks), MN] in one call (dg_quantize_fp8_k_grouped
 * takes counts of any size, and writes the nt GEMM's K-major form too). */
DG_API dg_status dg_quantize_fp8_mn_major(dg_stream* stream, const dg_tensor* x, const dg_tensor* out,
                                          const dg_tensor* sf, const dg_quant_options* options);

/* ============================================================================================
 * K-grouped FP8 quantization (MoE weight gradient; docs/quantization.md#k-grouped)
 *
 * The a / b operands and sfa / sfb of the K-grouped FP8 GEMMs (dg_k_grouped_fp8_gemm_*) from the
 * BF16 or FP32 tokens of G groups in one pass: per (MN index, 128 consecutive rows of a group) one
 * scale, numerics as dg_quantize_fp8_per_token. Each group's rows are padded to a multiple of 128
 * in the output, so a group whose count is not a multiple of 128 (any count, as routing gives them)
 * feeds the GEMM directly: its last block's amax runs over its k_g % 128 remaining rows only, and
 * the padding rows get code 0 (they add nothing to the GEMM). Call the GEMM with the padded counts
 * align(k_g, 128) (equal to ks when every count is a multiple of 128).
 *   x    BFLOAT16 or FLOAT32 [rows, MN], stride 1 along MN, element-aligned: group g's k_g rows at
 *        row k_0 + ... + k_{g-1} (the tokens routed to each expert, one group after another);
 *   out  FLOAT8_E4M3, group g at padded row P_g = align(k_0, 128) + ... + align(k_{g-1}, 128):
 *        rank 2 [P, MN] with stride 1 along MN: the a / b of dg_k_grouped_fp8_gemm_tn_contiguous
 *        (rows k_g .. align(k_g, 128) - 1 of each group written as 0); or
 *        rank 1 [MN * P], contiguous, 16-byte aligned: group g's [MN, align(k_g, 128)] K-major at
 *        element MN * P_g, the a / b of dg_k_grouped_fp8_gemm_nt_contiguous, transposed on the way
 *        (the nt GEMM then runs without the tn form's transpose pass and workspace);
 *        P = sum of align(k_g, 128);
 *   sf   FLOAT32 [MN, P / 128] in the layout dg_get_mn_major_tma_aligned_tensor_layout gives
 *        (stride 1 along MN, K blocks align(MN, 4) apart; the sfa / sfb the K-grouped GEMMs read),
 *        16-byte aligned; group g's scales at K blocks P_g / 128 ..; padding columns MN ..
 *        align(MN, 4) - 1 written as 0. options.pow2_scales gives power-of-two (UE8M0-valued)
 *        scales; the SM90 K-grouped GEMMs read FP32 scales, so there is no packed form here.
 *   ks, num_groups, ks_tensor: as the K-grouped GEMMs take them, num_groups >= 1, except that a
 *        count need not be a multiple of 128:
 *        - ks non-NULL: num_groups host counts, each >= 0, sum equal to x's rows, P below 2^31;
 *          ks_tensor NULL or the INT32 [num_groups] device copy, checked and not read.
 *        - ks NULL: the counts are read on the device from ks_tensor (INT32 [num_groups]; no host
 *          read, so a captured CUDA graph replays with new counts). x's rows and out's rows (a
 *          multiple of 128) are then capacities: counts below 0 count as 0, the groups' rows are
 *          cut at x's last row, and a group whose padded rows do not all fit in out is not written,
 *          codes and scales alike; nor are out's rows past the last group. rows(x) rounded up to
 *          128 plus 128 x num_groups always suffices.
 * MN = 0 or P = 0: nothing runs. */
DG_API dg_status dg_quantize_fp8_k_grouped(dg_stream* stream, const dg_tensor* x, const dg_tensor* out,
                                           const dg_tensor* sf, const int64_t* ks, int64_t num_groups,
                                           const dg_tensor* ks_tensor, const dg_quant_options* options);

/* Reorders SwiGLU weights for the fused SwiGLU epilogue: src [(G,) 2I, C] holds the gate rows
 * [0, I) then the up rows [I, 2I) (w1 and w3 concatenated, as checkpoints store them); dst, of the
 * same shape and dtype, gets blocks of `block` rows alternating: gate block j at rows
 * [2 j block, 2 j block + block), up block j right after. block = 128 for the weights ([G, 2I, K],
 * I % 128 == 0) and 1 for their 1D2D scales ([G, 2I / 128, ceil(K / 128)]): the 128 x 128 block
 * scales carry over unchanged. Rows of src and dst are packed (stride along rows = C, stride 1
 * along C); groups any stride; src and dst must not overlap. Any dtype. Device (or mapped) memory:
 * copies on the stream, no kernel. G, I or C = 0: nothing runs. */
DG_API dg_status dg_swiglu_interleave(dg_stream* stream, const dg_tensor* src, const dg_tensor* dst, int64_t block);

/* ============================================================================================
 * MQA logits of the DeepSeek-V3.2 indexer (SM90; docs/mqa_logits.md)
 *
 * Every query token scores the keys of its range with FP8 multi-query attention logits:
 *   logits[i, j] = kv_sf[j] * sum_h weights[i, h] * relu(q[i, h, :] . kv[j, :])
 * where q and kv are E4M3 values used as they are (q carries no scale) and the sums are FP32.
 * H (heads) 32 or 64 and D (head dim) 64 or 128; other values give DG_ERROR_UNSUPPORTED naming
 * the value. Results are bitwise reproducible from run to run. Callers allocate the logits:
 * dg_get_mqa_logits_layout gives the shape and a row stride. Everything runs on the stream with no
 * host synchronisation; data the host cannot see (key ranges) is clipped on the device.
 * ========================================================================================== */

/* Layout of the logits of dg_fp8_mqa_logits: sizes [seq_len, seq_len_kv], strides (row stride, 1)
 * with the row stride seq_len_kv rounded up to 1024 bytes, and the bytes to allocate.
 * logits_dtype FLOAT32 or BFLOAT16; any out-pointer may be NULL. With seq_len_kv = max_seqlen_k it
 * is the layout of dg_fp8_mqa_logits_compressed (DeepGEMM's: rows of align(max_seqlen_k, 256)
 * elements, 1024-byte aligned), and with max_context_len that of dg_fp8_paged_mqa_logits. */
DG_API dg_status dg_get_mqa_logits_layout(int64_t seq_len, int64_t seq_len_kv, dg_dtype logits_dtype,
                                          int64_t* out_sizes, int64_t* out_strides, size_t* out_bytes);

/* Non-paged MQA logits (prefill), DeepGEMM's fp8_mqa_logits:
 *   q        FLOAT8_E4M3 [S_q, H, D]: stride 1 along D, rows of D bytes a multiple of 16 bytes apart
 *            (stride(1)), stride(0) = H * stride(1), 16-byte aligned;
 *   kv       FLOAT8_E4M3 [S_kv, D]: stride 1 along D, stride(0) a multiple of 16, 16-byte aligned;
 *   kv_sf    FLOAT32 [S_kv] contiguous, 16-byte aligned: one scale per key;
 *   weights  FLOAT32 [S_q, H], stride 1 along H, rows a multiple of 16 bytes apart, 16-byte
 *            aligned;
 *   cu_seq_len_k_start, cu_seq_len_k_end   INT32 [S_q] contiguous: token i scores the keys
 *            [start[i], end[i]) (clipped to [0, S_kv); an empty range is allowed);
 *   logits   FLOAT32 or BFLOAT16 [S_q, S_kv], stride 1 along keys, row stride a multiple of 16
 *            bytes, 16-byte aligned (dg_get_mqa_logits_layout gives one).
 * clean_logits 1: every entry outside its row's range is -inf. 0: entries of a row's range are
 * written, others may hold values of no meaning or be left untouched (cheaper when the caller
 * masks). S_q or S_kv = 0: nothing runs. */
DG_API dg_status dg_fp8_mqa_logits(dg_stream* stream, const dg_tensor* q, const dg_tensor* kv, const dg_tensor* kv_sf,
                                   const dg_tensor* weights, const dg_tensor* cu_seq_len_k_start,
                                   const dg_tensor* cu_seq_len_k_end, const dg_tensor* logits, int32_t clean_logits);

/* The same logits in the compressed layout, DeepGEMM's fp8_mqa_logits with max_seqlen_k > 0 (long
 * prefills whose [S_q, S_kv] logits do not fit): row i holds token i's own keys from its first.
 * With [s, e) its range clipped to [0, S_kv) as above,
 *   logits[i, j - s]   for j in [s, min(e, s + max_seqlen_k)):
 * a range longer than max_seqlen_k keeps its first max_seqlen_k keys, and nothing is written past
 * column max_seqlen_k - 1. Entries of a row past its range's length may hold values of no
 * meaning or be left untouched (undefined in DeepGEMM). Arguments as dg_fp8_mqa_logits', except:
 *   max_seqlen_k  1 to 2^31 - 1: the logits' columns (at least the longest range, unless clipping
 *                 is meant);
 *   logits        FLOAT32 or BFLOAT16 [S_q, max_seqlen_k], stride 1 along keys, row stride a
 *                 multiple of 16 bytes, 16-byte aligned (dg_get_mqa_logits_layout(S_q,
 *                 max_seqlen_k, ...) gives one);
 *   clean_logits  0. No -inf is written in this layout (DeepGEMM requires clean_logits False);
 *                 1 gives DG_ERROR_UNSUPPORTED.
 * A separate kernel from dg_fp8_mqa_logits' (compiled on first use). S_q or S_kv = 0: nothing
 * runs. */
DG_API dg_status dg_fp8_mqa_logits_compressed(dg_stream* stream, const dg_tensor* q, const dg_tensor* kv,
                                              const dg_tensor* kv_sf, const dg_tensor* weights,
                                              const dg_tensor* cu_seq_len_k_start, const dg_tensor* cu_seq_len_k_end,
                                              int64_t max_seqlen_k, const dg_tensor* logits, int32_t clean_logits);

/* The schedule of dg_fp8_paged_mqa_logits, DeepGEMM's get_paged_mqa_logits_metadata, computed on
 * the stream (no host synchronisation, so it can be captured in a CUDA graph):
 *   context_lens   INT32 [B] or [B, next_n] (next_n 1, 2 or 4; stride 1 along next_n), as the
 *                  paged call gets them;
 *   block_kv       64 (keys per cache block on SM90; else DG_ERROR_UNSUPPORTED);
 *   num_sms        1 to 65535: the paged call runs this many CTAs (DeepGEMM passes the SM count);
 *   schedule_meta  INT32 [num_sms + 1, 2] contiguous, written.
 * Sequence b counts ceil(len_b / 256) segments of 256 keys, len_b its longest row (ctx[b], or the
 * largest of ctx[b, :]); the segments are split evenly over the CTAs (the first total % num_sms
 * get one more) and row s holds (sequence, segment) where CTA s starts; row num_sms is (B, 0). */
DG_API dg_status dg_get_paged_mqa_logits_metadata(dg_stream* stream, const dg_tensor* context_lens, int32_t block_kv,
                                                  int32_t num_sms, const dg_tensor* schedule_meta);

/* Paged MQA logits (decoding), DeepGEMM's fp8_paged_mqa_logits: row r = b * next_n + j scores
 * the cached keys t of sequence b,
 *   logits[r, t] = sf(b, t) * sum_h weights[r, h] * relu(q[b, j, h, :] . kv(b, t, :)),
 *   q             FLOAT8_E4M3 [B, next_n, H, D] (next_n 1, 2 or 4): stride 1 along D, (token, head)
 *                 rows of D bytes evenly spaced by a multiple of 16 bytes, 16-byte aligned;
 *   kv_cache      UINT8 [num_blocks, 64, 1, D + 4], stride(1) = D + 4, stride(3) = 1, blocks a
 *                 multiple of 16 bytes apart, 16-byte aligned: a block holds the FP8 values of its
 *                 64 keys ([64, D], key-major), then their 64 FP32 scales;
 *   weights       FLOAT32 [B * next_n, H], stride 1 along H, rows a multiple of 16 bytes apart,
 *                 16-byte aligned;
 *   context_lens  INT32 [B]: row j of sequence b covers t <= ctx[b] - next_n + j (the speculative
 *                 tokens are causal), or [B, next_n] (stride 1 along next_n): t < ctx[b, j];
 *   block_table   INT32 [B, max_blocks], stride 1 along blocks: key t of sequence b is slot t % 64
 *                 of block block_table[b, t / 64] (an index outside the cache reads zeros);
 *   schedule_meta INT32 [num_ctas + 1, 2] from dg_get_paged_mqa_logits_metadata with the same
 *                 context lengths (a stale one leaves entries unwritten, never more);
 *   logits        FLOAT32 or BFLOAT16 [B * next_n, max_context_len], stride 1 along keys, row
 *                 stride a multiple of 16 bytes, 16-byte aligned (dg_get_mqa_logits_layout gives
 *                 one).
 * A sequence's keys are those of its longest row, clipped to max_context_len and to the block
 * table's max_blocks * 64 keys; nothing is written past max_context_len. clean_logits 1: every
 * entry of a row past its end is -inf. 0: entries of a row up to its end are written, others may
 * hold values of no meaning or be left untouched. No host synchronisation: the call can be
 * captured in a CUDA graph (call dg_paged_mqa_logits_prepare first) and replayed with new context
 * lengths and block tables. B * next_n = 0 or max_context_len = 0: nothing runs. */
DG_API dg_status dg_fp8_paged_mqa_logits(dg_stream* stream, const dg_tensor* q, const dg_tensor* kv_cache,
                                         const dg_tensor* weights, const dg_tensor* context_lens,
                                         const dg_tensor* block_table, const dg_tensor* schedule_meta,
                                         int64_t max_context_len, const dg_tensor* logits, int32_t clean_logits);

/* Compiles and loads (no launch, no device memory touched) the schedule kernel and the paged
 * kernel for H (heads 32 or 64), D (head_dim 64 or 128), next_n (1, 2 or 4) and logits_dtype
 * (FLOAT32 or BFLOAT16). Call it before capturing a CUDA graph. */
DG_API dg_status dg_paged_mqa_logits_prepare(dg_stream* stream, int32_t heads, int32_t head_dim, int32_t next_n,
                                             dg_dtype logits_dtype);

/* ============================================================================================
 * NVFP4 GEMV
 *
 * For every batch l < L: c[m, 0, l] = sum_k A[m, k, l] * b[0, k, l], m < M, where each value is
 * an E2M1 code times the E4M3 scale of its 16 consecutive k (docs/nvfp4_gemv.md). One launch
 * covers every batch; no host synchronisation. Products of each 16-element block are summed
 * exactly (int32 on SM90, f16x2 on SM100), block sums in FP32, the result rounded to FP16.
 * SM100 uses the hardware E2M1 conversion; that path is compiled in CI but has not run on a
 * Blackwell GPU yet.
 * ========================================================================================== */

/* Tuning overrides of dg_nvfp4_gemv; initialise with DG_NVFP4_GEMV_OPTIONS_INIT. Every field
 * left 0 is chosen by the heuristic from (M, K, L), the SM count and the alignment of the
 * operands. NULL options mean all defaults. */
typedef struct dg_nvfp4_gemv_options {
  size_t struct_size;
  int32_t threads_per_row;   /* threads sharing one row of a: 1, 2, 4, 8, 16 or a multiple of 32 (<= 1024) */
  int32_t row_groups;        /* rows a block works on side by side (threads_per_row * row_groups <= 1024) */
  int32_t chunks_per_thread; /* vector loads per thread per row (1..16); K beyond threads_per_row *
                                chunks_per_thread loads is walked in segments (large-K loop shape) */
  int32_t rows_per_round;    /* rows each group loads at once (1..8): loads in flight per thread =
                                rows_per_round * chunks_per_thread */
  int32_t vector_bytes;      /* 16 or 8: bytes per load of a (8 only needs 8-byte aligned a and b) */
  int32_t grid_blocks;       /* blocks; 0 = at most one wave of the device, as few as keep it as short */
  int32_t cache_hint;        /* loads of a and sfa: 0 L1::no_allocate, 1 plain .nc, 2 .cs (evict first),
                                3 L1::no_allocate + L2::256B prefetch */
  int32_t prefetch;          /* 0 or 1: prefetch the next rows before computing; -1: off */
} dg_nvfp4_gemv_options;
#define DG_NVFP4_GEMV_OPTIONS_INIT {sizeof(dg_nvfp4_gemv_options), 0, 0, 0, 0, 0, 0, 0, 0}

/* Batched NVFP4 GEMV. Tensors (sizes as [rows, K-dimension, batch]; strides in elements, read
 * from the descriptors, so PyTorch's permuted layouts work as they are):
 *   a   [M, K/2, L]   DG_DTYPE_FLOAT4_E2M1X2 (one byte = two codes, even k in the low nibble)
 *   sfa [M, K/16, L]  DG_DTYPE_FLOAT8_E4M3
 *   b   [Np, K/2, L]  DG_DTYPE_FLOAT4_E2M1X2; only row 0 is read (Np >= 1, e.g. 128 of padding)
 *   sfb [Np', K/16, L] DG_DTYPE_FLOAT8_E4M3; only row 0 is read
 *   c   [M, 1, L]     DG_DTYPE_FLOAT16, written
 * Rank 2 ([M, K/2] ... [M, 1]) means L = 1. K must be a multiple of 32; the K dimension of a, sfa,
 * b and sfb must have stride 1. Loads of a and b are 16 bytes wide when a, b and their row and
 * batch strides are 16-byte aligned (sfa/sfb then 2-byte aligned), else 8 bytes wide (8-byte
 * alignment needed). M, L, K may be 0 (nothing to do for M or L = 0; c = 0 for K = 0).
 * Returns DG_ERROR_INVALID_ARGUMENT naming the argument for a wrong dtype, rank, size or stride,
 * K not a multiple of 32, or misaligned pointers; DG_ERROR_UNSUPPORTED on a device older than
 * SM90. `options` may be NULL. */
DG_API dg_status dg_nvfp4_gemv(dg_stream* stream, const dg_tensor* a, const dg_tensor* sfa, const dg_tensor* b,
                               const dg_tensor* sfb, const dg_tensor* c, const dg_nvfp4_gemv_options* options);

/* ============================================================================================
 * Hyper-connection pre-norm GEMM
 *
 * DeepGEMM's tf32_hc_prenorm_gemm: the projection of a hyper-connection's residual streams and,
 * for its RMS norm, each row's sum of squares, in one pass over A:
 *   D[s, m, n] = sum over k in K_s of A[m, k] * B[n, k]     S[s, m] = sum over k in K_s of A[m, k]^2
 * where the K ranges K_s of the splits s < num_splits partition [0, K) (whole 32-element chunks,
 * spread evenly; trailing splits may be empty, their D and S rows then 0). The caller sums the
 * partials over s. num_splits = 0: no split, D [M, N] and S [M] hold the full sums.
 * Numerics: TF32 tensor-core products (A is BF16, exact in TF32; B is rounded to the nearest TF32,
 * relative error <= 2^-11), FP32 accumulation; S from exact FP32 squares with FP32 accumulation.
 * The kernel is bound by reading A once (N multiply-adds per element of A).
 * ========================================================================================== */

/* Tensors (strides in elements, read from the descriptors):
 *   a        [M, K]                DG_DTYPE_BFLOAT16, stride 1 along K
 *   b        [N, K]                DG_DTYPE_FLOAT32, stride 1 along K; 1 <= N <= 32
 *   d        [M, N] or [num_splits, M, N]   DG_DTYPE_FLOAT32, stride 1 along N; written
 *   sqr_sum  [M] or [num_splits, M]         DG_DTYPE_FLOAT32, any strides; written
 * num_splits 0 (no split) or 1..65535. M, K below 2^31 - 256; M = 0: nothing runs; K = 0: D and S
 * are zeros. Where a, b and their row strides are 16-byte aligned and K >= 64, A streams through
 * shared memory by TMA (clusters of CTAs share a split's K when the grid is small); else a kernel
 * loads A into registers, element by element where rows are not aligned (docs/hc_prenorm.md).
 * d and sqr_sum must not overlap each other or the inputs. No host
 * synchronisation (the call can be captured in a CUDA graph once its kernel is loaded by a first
 * call). Returns DG_ERROR_INVALID_ARGUMENT naming the argument for a wrong dtype, rank, size,
 * stride, alignment or num_splits; DG_ERROR_UNSUPPORTED for N > 32 or a device older than SM90. */
DG_API dg_status dg_tf32_hc_prenorm_gemm(dg_stream* stream, const dg_tensor* a, const dg_tensor* b,
                                         const dg_tensor* d, const dg_tensor* sqr_sum, int32_t num_splits);

/* ============================================================================================
 * cuBLASLt baseline
 *
 * DeepGEMM's cublaslt_gemm_* (docs/gemm.md#the-cublaslt-baseline): one cublasLtMatmul, the reference libdg's GEMMs are
 * timed against. libcublasLt.so.13 (then libcublasLt.so) is loaded with dlopen at first use;
 * where it cannot be loaded every call returns DG_ERROR_UNSUPPORTED with the reason.
 * ========================================================================================== */

/* Options of dg_cublaslt_gemm_*; initialise with DG_CUBLASLT_OPTIONS_INIT. NULL options mean
 * the defaults: alpha 1, beta 1, no workspace. */
typedef struct dg_cublaslt_options {
  size_t struct_size;
  float alpha;           /* D = alpha * (A @ op(B)) + beta * C */
  float beta;            /* read only when C is given */
  void* workspace;       /* device scratch for split-K algorithms, 256-byte aligned, or NULL */
  size_t workspace_size; /* bytes of workspace (0 with NULL): libdg never allocates it itself */
} dg_cublaslt_options;
#define DG_CUBLASLT_OPTIONS_INIT {sizeof(dg_cublaslt_options), 1.0f, 1.0f, NULL, 0}

/* Recommended workspace bytes (32 MiB, as DeepGEMM uses): with less, cuBLASLt may pick slower
 * algorithms for small-M or large-K shapes. */
DG_API size_t dg_cublaslt_workspace_size(void);

/* DG_SUCCESS when cuBLASLt can be loaded, else DG_ERROR_UNSUPPORTED with the reason. */
DG_API dg_status dg_cublaslt_available(void);

/* D = alpha * (A @ Bᵀ) + beta * C with DeepGEMM's NT naming, all matrices 2-D:
 *   nt: a [M, K], b [N, K]     nn: a [M, K], b [K, N]
 *   tn: a [K, M], b [K, N]     tt: a [K, M], b [N, K]
 * a and b: both BFLOAT16, or both FLOAT8_E4M3 used raw (no scales, fast accumulation off; cuBLASLt
 * takes FP8 only with both operands K-major, i.e. the nt layout with stride(1) == 1, else
 * DG_ERROR_UNSUPPORTED). Each operand may be K-major or MN-major (read from its strides).
 * d: [M, N] row-major, BFLOAT16 or FLOAT32. c: NULL (no C term) or [M, N] row-major with d's dtype;
 * c may alias d (same pointer, then identical strides). FP32 accumulation; the stream's SM cap is
 * passed to cuBLASLt as its SM-count target. M == 0 or N == 0: nothing runs. K == 0: D = beta * C,
 * or zeros without c. Plans (descriptors + the heuristic's algorithm) are cached per shape, so a
 * repeated call costs one lookup and one cublasLtMatmul. */
DG_API dg_status dg_cublaslt_gemm_nt(dg_stream* stream, const dg_tensor* a, const dg_tensor* b, const dg_tensor* d,
                                     const dg_tensor* c, const dg_cublaslt_options* options);
DG_API dg_status dg_cublaslt_gemm_nn(dg_stream* stream, const dg_tensor* a, const dg_tensor* b, const dg_tensor* d,
                                     const dg_tensor* c, const dg_cublaslt_options* options);
DG_API dg_status dg_cublaslt_gemm_tn(dg_stream* stream, const dg_tensor* a, const dg_tensor* b, const dg_tensor* d,
                                     const dg_tensor* c, const dg_cublaslt_options* options);
DG_API dg_status dg_cublaslt_gemm_tt(dg_stream* stream, const dg_tensor* a, const dg_tensor* b, const dg_tensor* d,
                                     const dg_tensor* c, const dg_cublaslt_options* options);

#ifdef __cplusplus
}
#endif

#endif /* DG_H */
