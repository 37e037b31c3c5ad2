//! The binding on a machine without a GPU (also correct with one): version, configuration,
//! errors with libdg's messages, NoDevice, and the offline stream compiling a kernel.

use std::fs;
use std::os::raw::c_void;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::{SystemTime, UNIX_EPOCH};

use dg::{
    sys, Activation, Config, ConfigKey, DType, ErrorKind, GemmEpilogue, GemmLayout, GemmOptions, LogLevel,
    MGroupedLayout, QuantOptions, SfRecipe, Stream, Tensor, TuneOptions,
};

// Tests that change process-wide state (log level and callback, SM cap) take this lock.
static PROCESS_STATE: Mutex<()> = Mutex::new(());

fn scratch_dir(tag: &str) -> PathBuf {
    let nanos = SystemTime::now().duration_since(UNIX_EPOCH).unwrap().as_nanos();
    let dir = std::env::temp_dir().join(format!("dg-rust-{}-{}-{}", tag, std::process::id(), nanos));
    fs::create_dir_all(&dir).unwrap();
    dir
}

/// A made-up, aligned device address: only for calls that fail or stop before any launch.
fn fake_device_ptr(offset: usize) -> *mut c_void {
    (0x7f00_0000_0000usize + offset * 0x10_0000) as *mut c_void
}

#[test]
fn version_matches_the_header() {
    let expected = format!("{}.{}.{}", sys::DG_VERSION_MAJOR, sys::DG_VERSION_MINOR, sys::DG_VERSION_PATCH);
    assert_eq!(dg::version(), expected);
    assert_eq!(dg::version_number(), sys::DG_VERSION_NUMBER);
}

#[test]
fn info_report_names_the_version_nvrtc_and_driver() {
    let report = dg::info_report().unwrap();
    assert!(report.starts_with(&format!("libdg: {}\n", dg::version())), "{}", report);
    for key in ["\nnvrtc: ", "\ndriver: ", "\njit cache: ", "\nenv: "] {
        assert!(report.contains(key), "{} missing from {}", key, report);
    }
}

#[test]
fn status_and_dtype_names() {
    assert_eq!(dg::status_string(sys::DG_SUCCESS), "DG_SUCCESS");
    assert_eq!(dg::status_string(sys::DG_ERROR_NO_DEVICE), "DG_ERROR_NO_DEVICE");
    assert_eq!(dg::status_string(1000), "DG_UNKNOWN_STATUS");
    assert_eq!(DType::BFLOAT16.name(), "bfloat16");
    assert_eq!(DType::BFLOAT16.size(), 2);
    assert_eq!(DType::FLOAT8_E4M3.size(), 1);
    assert_eq!(DType::FLOAT4_E2M1X2.size(), 1);
    assert_eq!(DType::FLOAT32.size(), 4);
    assert_eq!(DType::from_raw(1000).size(), 0);
    assert_eq!(DType::from_raw(1000).name(), "unknown");
}

#[test]
fn config_set_get_and_bounds() {
    assert_eq!(Config::bounds(ConfigKey::NUM_SMS).unwrap(), (0, 1024));
    assert_eq!(Config::bounds(ConfigKey::TC_UTIL).unwrap(), (1, 100));
    let mut config = Config::new().unwrap();
    config.set_int(ConfigKey::NUM_SMS, 66).unwrap();
    assert_eq!(config.get_int(ConfigKey::NUM_SMS).unwrap(), 66);
    config.set_int(ConfigKey::PDL, 1).unwrap();
    assert_eq!(config.get_int(ConfigKey::PDL).unwrap(), 1);
    config.set_int(ConfigKey::COMPILER, Config::COMPILER_NVCC).unwrap();
    assert_eq!(config.get_int(ConfigKey::COMPILER).unwrap(), Config::COMPILER_NVCC);

    let e = config.set_int(ConfigKey::NUM_SMS, 1025).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::InvalidArgument);
    assert_eq!(e.status(), sys::DG_ERROR_INVALID_ARGUMENT);
    assert!(e.message().contains("1025") && e.message().contains("0..1024"), "{}", e);
    assert_eq!(config.get_int(ConfigKey::NUM_SMS).unwrap(), 66, "a rejected value must not be stored");

    let dir = "/tmp/dg rust cache/é";
    config.set_string(ConfigKey::CACHE_DIR, dir).unwrap();
    assert_eq!(config.get_string(ConfigKey::CACHE_DIR).unwrap(), dir);
    config.set_string(ConfigKey::CACHE_DIR, "").unwrap();
    assert_eq!(config.get_string(ConfigKey::CACHE_DIR).unwrap(), "");
    let e = config.set_string(ConfigKey::CACHE_DIR, "a\0b").unwrap_err();
    assert_eq!(e.kind(), ErrorKind::InvalidArgument);
    assert!(e.message().contains("NUL"), "{}", e);

    let mut copy = config.try_clone().unwrap();
    assert_eq!(copy.get_int(ConfigKey::NUM_SMS).unwrap(), 66);
    copy.set_int(ConfigKey::NUM_SMS, 8).unwrap();
    assert_eq!(config.get_int(ConfigKey::NUM_SMS).unwrap(), 66, "a clone is independent");

    let e = config.get_int(ConfigKey::from_raw(999)).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::InvalidArgument);
    assert!(e.message().contains("999"), "{}", e);
    let e = config.get_int(ConfigKey::CACHE_DIR).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::InvalidArgument, "a string key read as an int");
}

#[test]
fn validation_errors_carry_libdg_messages() {
    assert_eq!(dg::tma_aligned_size(5, 2).unwrap(), 8);
    let e = dg::tma_aligned_size(5, 3).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::InvalidArgument);
    assert!(e.message().contains("element_size") && e.message().contains('3'), "{}", e);
    assert!(e.to_string().starts_with("DG_ERROR_INVALID_ARGUMENT: "), "{}", e);

    let e = Tensor::without_data(DType::BFLOAT16, &[1, 2, 3, 4, 5], None).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::InvalidArgument);
    assert!(e.message().contains("rank"), "{}", e);
    let e = Tensor::without_data(DType::BFLOAT16, &[4, -1], None).unwrap_err();
    assert!(e.message().contains("-1"), "{}", e);
    let e = Tensor::without_data(DType::BFLOAT16, &[4, 8], Some(&[8])).unwrap_err();
    assert!(e.message().contains("strides"), "{}", e);
    let e = Tensor::without_data(DType::from_raw(77), &[4], None).unwrap_err();
    assert!(e.message().contains("77"), "{}", e);

    let e = dg::fp8_gemm_workspace_size(GemmLayout::from_raw(9), 128, 128, 128).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::InvalidArgument);
    assert!(e.message().contains("layout"), "{}", e);
    // nn: b stored [K, N] is MN-major and gets a K-major copy of align(N * K, 256) bytes.
    assert_eq!(dg::fp8_gemm_workspace_size(GemmLayout::NT, 256, 512, 384).unwrap(), 0);
    assert_eq!(dg::fp8_gemm_workspace_size(GemmLayout::NN, 256, 512, 384).unwrap(), 512 * 384);

    let layout = dg::mn_major_tma_aligned_tensor_layout(&[1000, 56]).unwrap();
    assert_eq!(layout.sizes, vec![1000, 56]);
    assert_eq!(layout.strides, vec![1, 1000]);
    assert_eq!(layout.bytes, 1000 * 56 * 4);
    let layout = dg::mn_major_tma_aligned_tensor_layout(&[1001, 56]).unwrap();
    assert_eq!(layout.strides, vec![1, 1004]);
    let packed = dg::mn_major_tma_aligned_packed_ue8m0_tensor_layout(&[2, 1001, 9]).unwrap();
    assert_eq!(packed.sizes, vec![2, 1001, 3]);
    assert_eq!(packed.strides, vec![3 * 1004, 1, 1004]);
    let e = dg::mn_major_tma_aligned_tensor_layout(&[]).unwrap_err();
    assert!(e.message().contains("rank"), "{}", e);

    // K-grouped packing: 4 + 0 + 5 K blocks -> 1 + 0 + 2 packed rows, rows padded to 4 words.
    let kg = dg::k_grouped_mn_major_tma_aligned_packed_ue8m0_tensor_layout(1001, &[512, 0, 640]).unwrap();
    assert_eq!(kg.sizes, vec![3, 1001]);
    assert_eq!(kg.strides, vec![1004, 1]);
    assert_eq!(kg.bytes, 3 * 1004 * 4);
    let e = dg::k_grouped_mn_major_tma_aligned_packed_ue8m0_tensor_layout(1001, &[512, 100]).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::InvalidArgument);
    assert!(e.message().contains("ks[1]: 100"), "{}", e);
    let e = dg::k_grouped_mn_major_tma_aligned_packed_ue8m0_tensor_layout(1001, &[]).unwrap_err();
    assert!(e.message().contains("num_groups"), "{}", e);
}

#[test]
fn tensor_descriptors_round_trip() {
    let mut t = unsafe { Tensor::new(fake_device_ptr(1), DType::FLOAT8_E4M3, &[128, 512], None) }.unwrap();
    let info = t.info().unwrap();
    assert_eq!(info.data, fake_device_ptr(1));
    assert_eq!(info.dtype, DType::FLOAT8_E4M3);
    assert_eq!(info.sizes, vec![128, 512]);
    assert_eq!(info.strides, vec![512, 1], "contiguous row-major by default");
    unsafe { t.set_data(fake_device_ptr(2)) }.unwrap();
    assert_eq!(t.info().unwrap().data, fake_device_ptr(2));
    let t = Tensor::without_data(DType::FLOAT32, &[3, 5, 7], Some(&[1, 3, 15])).unwrap();
    assert_eq!(t.info().unwrap().strides, vec![1, 3, 15]);
    assert!(t.info().unwrap().data.is_null());
}

#[test]
fn no_device_is_reported() {
    match dg::device_count() {
        Err(e) => {
            // No driver here: every call that needs one says so.
            assert_eq!(e.kind(), ErrorKind::NoDevice);
            assert!(e.message().contains("libcuda"), "{}", e);
            let e = Stream::new(0, None).unwrap_err();
            assert_eq!(e.kind(), ErrorKind::NoDevice, "{}", e);
            assert!(!e.message().is_empty());
            let e = dg::device_capability(0).unwrap_err();
            assert_eq!(e.kind(), ErrorKind::NoDevice, "{}", e);
        }
        Ok(count) => {
            // A GPU machine: an ordinal past the last device is NoDevice.
            let e = Stream::new(count, None).unwrap_err();
            assert_eq!(e.kind(), ErrorKind::NoDevice, "{}", e);
        }
    }
}

#[test]
fn offline_stream_refuses_launches_after_validating() {
    let stream = Stream::offline(9, 0, 132, None).unwrap();
    let (m, n, k) = (128, 256, 512);
    let (a, b, d, short_b) = unsafe {
        (
            Tensor::new(fake_device_ptr(1), DType::BFLOAT16, &[m, k], None).unwrap(),
            Tensor::new(fake_device_ptr(2), DType::BFLOAT16, &[n, k], None).unwrap(),
            Tensor::new(fake_device_ptr(3), DType::BFLOAT16, &[m, n], None).unwrap(),
            Tensor::new(fake_device_ptr(4), DType::BFLOAT16, &[n, k - 64], None).unwrap(),
        )
    };
    let e = stream.bf16_gemm_nt(&a, &short_b, &d, None, None).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::InvalidArgument, "{}", e);
    assert!(e.message().contains('b'), "{}", e);
    let null_d = Tensor::without_data(DType::BFLOAT16, &[m, n], None).unwrap();
    let e = stream.bf16_gemm_nt(&a, &b, &null_d, None, None).unwrap_err();
    assert!(e.message().contains("d: data is NULL"), "{}", e);
    let e = stream.bf16_gemm_nt(&a, &b, &d, None, Some(&GemmOptions::new().block_m(96))).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::InvalidArgument, "{}", e);
    assert!(e.message().contains("block_m"), "{}", e);
    let e = stream.synchronize().unwrap_err();
    assert_eq!(e.kind(), ErrorKind::NoDevice, "{}", e);
}

#[test]
fn offline_stream_prepare_compiles_a_kernel() {
    let _guard = PROCESS_STATE.lock().unwrap_or_else(|p| p.into_inner());
    let cache = scratch_dir("cache");
    let mut config = Config::new().unwrap();
    config.set_string(ConfigKey::CACHE_DIR, cache.to_str().unwrap()).unwrap();
    config.set_int(ConfigKey::PRINT_CONFIGS, 1).unwrap();
    let messages = Arc::new(Mutex::new(Vec::<(LogLevel, String)>::new()));
    let sink = Arc::clone(&messages);
    dg::set_log_callback(Some(move |level, text: &str| sink.lock().unwrap().push((level, text.to_string()))))
        .unwrap();

    let stream = Stream::offline(9, 0, 132, Some(&config)).unwrap();
    let before = dg::jit_stats().unwrap();
    stream.gemm_prepare(DType::BFLOAT16, GemmLayout::NT, 256, 512, 384, DType::BFLOAT16, false, None).unwrap();
    let after = dg::jit_stats().unwrap();
    dg::set_log_callback(None::<fn(LogLevel, &str)>).unwrap();

    assert!(after.compiled > before.compiled, "no kernel compiled: {:?} -> {:?}", before, after);
    let entries: Vec<_> = fs::read_dir(cache.join("libdg")).unwrap().map(|e| e.unwrap().file_name()).collect();
    assert!(
        entries.iter().any(|n| n.to_string_lossy().ends_with(".cubin")),
        "no cubin in the cache directory: {:?}",
        entries
    );
    let messages = messages.lock().unwrap();
    assert!(
        messages.iter().any(|(level, text)| *level == LogLevel::WARN && text.contains("256")),
        "the configuration was not logged through the callback: {:?}",
        messages
    );
    fs::remove_dir_all(&cache).unwrap();
}

#[test]
fn offline_scale_layout_query() {
    let stream = Stream::offline(9, 0, 132, None).unwrap();
    let sf = Tensor::without_data(DType::FLOAT32, &[1000, 56], None).unwrap();
    let layout = dg::transform_sf_layout(Some(&stream), &sf, 1000, 56 * 128, &SfRecipe::new()).unwrap();
    assert!(!layout.is_input, "row-major per-token scales need the MN-major copy");
    assert_eq!(layout.dtype, DType::FLOAT32);
    assert_eq!(layout.layout.strides, vec![1, 1000]);
    let e = dg::transform_sf_layout(Some(&stream), &sf, 1000, 56 * 128, &SfRecipe::new().gran_k(7)).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::InvalidArgument, "{}", e);
}

#[test]
fn process_wide_settings() {
    let _guard = PROCESS_STATE.lock().unwrap_or_else(|p| p.into_inner());
    let level = dg::log_level();
    dg::set_log_level(LogLevel::ERROR).unwrap();
    assert_eq!(dg::log_level(), LogLevel::ERROR);
    let e = dg::set_log_level(LogLevel::from_raw(42)).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::InvalidArgument, "{}", e);
    dg::set_log_level(level).unwrap();

    dg::set_num_sms(66).unwrap();
    assert_eq!(dg::num_sms(), 66);
    assert_eq!(dg::set_num_sms(-1).unwrap_err().kind(), ErrorKind::InvalidArgument);
    dg::set_num_sms(0).unwrap();
    dg::set_tc_util(0.5).unwrap();
    assert_eq!(dg::tc_util(), 0.5);
    assert_eq!(dg::set_tc_util(1.5).unwrap_err().kind(), ErrorKind::InvalidArgument);
    dg::set_tc_util(0.0).unwrap();
    assert_eq!(dg::tc_util(), 1.0);
    assert_eq!(dg::mk_alignment_for_contiguous_layout(), 128);
    assert_eq!(dg::cublaslt_workspace_size(), 32 << 20);
}

#[test]
fn offline_m_grouped_prepare_and_validation() {
    let stream = Stream::offline(9, 0, 132, None).unwrap();
    let before = dg::jit_stats().unwrap();
    stream
        .m_grouped_gemm_prepare(DType::BFLOAT16, GemmLayout::NT, MGroupedLayout::MASKED, 4, 256, 512, 384, 64, None)
        .unwrap();
    let after = dg::jit_stats().unwrap();
    assert!(
        after.compiled + after.loaded_from_disk + after.memory_hits > before.compiled + before.loaded_from_disk + before.memory_hits,
        "no kernel prepared: {:?} -> {:?}",
        before,
        after
    );
    let e = stream
        .m_grouped_gemm_prepare(DType::FLOAT32, GemmLayout::NT, MGroupedLayout::MASKED, 4, 256, 512, 384, 64, None)
        .unwrap_err();
    assert_eq!(e.kind(), ErrorKind::InvalidArgument, "{}", e);

    let (g, m, n, k) = (4, 512, 256, 384);
    let (a, b, d, wrong_dtype_layout) = unsafe {
        (
            Tensor::new(fake_device_ptr(1), DType::BFLOAT16, &[m, k], None).unwrap(),
            Tensor::new(fake_device_ptr(2), DType::BFLOAT16, &[g, n, k], None).unwrap(),
            Tensor::new(fake_device_ptr(3), DType::BFLOAT16, &[m, n], None).unwrap(),
            Tensor::new(fake_device_ptr(4), DType::FLOAT32, &[m], None).unwrap(),
        )
    };
    let e = stream
        .m_grouped_bf16_gemm_nt_contiguous(&a, &b, &d, &wrong_dtype_layout, MGroupedLayout::INDICES, 0, None)
        .unwrap_err();
    assert_eq!(e.kind(), ErrorKind::InvalidArgument, "{}", e);
    assert!(e.message().contains("grouped_layout"), "{}", e);
}

#[test]
fn offline_k_grouped_prepare_and_validation() {
    let stream = Stream::offline(9, 0, 132, None).unwrap();
    let ks = [256i64, 0, 384];
    let before = dg::jit_stats().unwrap();
    stream.k_grouped_gemm_prepare(DType::BFLOAT16, GemmLayout::TN, 256, 128, &ks, true, None).unwrap();
    let after = dg::jit_stats().unwrap();
    assert!(
        after.compiled + after.loaded_from_disk + after.memory_hits > before.compiled + before.loaded_from_disk + before.memory_hits,
        "no kernel prepared: {:?} -> {:?}",
        before,
        after
    );
    let e = stream.k_grouped_gemm_prepare(DType::BFLOAT16, GemmLayout::NT, 256, 128, &ks, true, None).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Unsupported, "{}", e);
    assert!(e.message().contains("layout"), "{}", e);

    let (m, n, k) = (256i64, 128i64, 640i64);
    let (a, b, d, sf_a, sf_b, flat_a, flat_b) = unsafe {
        (
            Tensor::new(fake_device_ptr(1), DType::BFLOAT16, &[k, m], None).unwrap(),
            Tensor::new(fake_device_ptr(2), DType::BFLOAT16, &[k, n], None).unwrap(),
            Tensor::new(fake_device_ptr(3), DType::FLOAT32, &[3, m, n], None).unwrap(),
            Tensor::new(fake_device_ptr(4), DType::FLOAT32, &[m, k / 128], Some(&[1, m])).unwrap(),
            Tensor::new(fake_device_ptr(5), DType::FLOAT32, &[n, k / 128], Some(&[1, n])).unwrap(),
            Tensor::new(fake_device_ptr(6), DType::FLOAT8_E4M3, &[m * k], None).unwrap(),
            Tensor::new(fake_device_ptr(7), DType::FLOAT8_E4M3, &[n * k], None).unwrap(),
        )
    };
    // ks summing to 512, not the data's 640.
    let e = stream.k_grouped_bf16_gemm_tn_contiguous(&a, &b, &d, None, &[256, 0, 256], None, None).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::InvalidArgument, "{}", e);
    assert!(e.message().contains("ks"), "{}", e);
    // A K not a multiple of 128.
    let e = stream
        .k_grouped_fp8_gemm_nt_contiguous(&flat_a, &sf_a, &flat_b, &sf_b, &d, Some(&d), &[320, 0, 320], None, None)
        .unwrap_err();
    assert_eq!(e.kind(), ErrorKind::InvalidArgument, "{}", e);
    assert!(e.message().contains("ks"), "{}", e);
    // d with a group count different from ks.
    let e = stream
        .k_grouped_fp8_gemm_tn_contiguous(&a, &sf_a, &b, &sf_b, &d, None, &[640], None, None)
        .unwrap_err();
    assert_eq!(e.kind(), ErrorKind::InvalidArgument, "{}", e);
}

#[test]
fn mqa_logits_layout_query() {
    // Rows padded to 1024 bytes: 256 FLOAT32 or 512 BFLOAT16 elements.
    for (dtype, size) in [(DType::FLOAT32, 4i64), (DType::BFLOAT16, 2)] {
        for (seq_len, seq_len_kv) in [(3i64, 1000i64), (1, 1), (5, 1024 / size), (2, 1024 / size + 1), (0, 7), (4, 0)] {
            let layout = dg::mqa_logits_layout(seq_len, seq_len_kv, dtype).unwrap();
            let stride = (seq_len_kv * size + 1023) / 1024 * 1024 / size;
            assert_eq!(layout.sizes, vec![seq_len, seq_len_kv]);
            assert_eq!(layout.strides, vec![stride, 1], "{:?} {} x {}", dtype, seq_len, seq_len_kv);
            assert_eq!(layout.bytes as i64, seq_len * stride * size);
        }
    }
    assert_eq!(dg::mqa_logits_layout(3, 1000, DType::FLOAT32).unwrap().strides, vec![1024, 1]);
    let e = dg::mqa_logits_layout(4, 1000, DType::FLOAT16).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::InvalidArgument, "{}", e);
    assert!(e.message().contains("logits_dtype"), "{}", e);
    let e = dg::mqa_logits_layout(-1, 1000, DType::FLOAT32).unwrap_err();
    assert!(e.message().contains("seq_len: -1"), "{}", e);
    let e = dg::mqa_logits_layout(4, -2, DType::BFLOAT16).unwrap_err();
    assert!(e.message().contains("seq_len_kv: -2"), "{}", e);
    let e = dg::mqa_logits_layout(1 << 62, 1 << 20, DType::FLOAT32).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::InvalidArgument, "an allocation size past int64: {}", e);
    assert!(e.message().contains("overflows"), "{}", e);
}

/// A tensor at a made-up device address (the `i`-th), contiguous unless `strides` is given.
fn fake(i: usize, dtype: DType, sizes: &[i64], strides: Option<&[i64]>) -> Tensor {
    // SAFETY: only for calls that fail or stop before any launch.
    unsafe { Tensor::new(fake_device_ptr(i), dtype, sizes, strides) }.unwrap()
}

#[test]
fn offline_mqa_logits_validation() {
    let stream = Stream::offline(9, 0, 132, None).unwrap();
    let (s_q, h, d, s_kv) = (4i64, 64i64, 128i64, 256i64);
    let fp8 = DType::FLOAT8_E4M3;
    let q = fake(1, fp8, &[s_q, h, d], None);
    let kv = fake(2, fp8, &[s_kv, d], None);
    let kv_sf = fake(3, DType::FLOAT32, &[s_kv], None);
    let weights = fake(4, DType::FLOAT32, &[s_q, h], None);
    let ks = fake(5, DType::INT32, &[s_q], None);
    let ke = fake(6, DType::INT32, &[s_q], None);
    let layout = dg::mqa_logits_layout(s_q, s_kv, DType::FLOAT32).unwrap();
    let logits = fake(7, DType::FLOAT32, &layout.sizes, Some(&layout.strides));
    let call = |q: &Tensor, kv: &Tensor, kv_sf: &Tensor, weights: &Tensor, ks: &Tensor, ke: &Tensor, logits: &Tensor| {
        stream.fp8_mqa_logits(q, kv, kv_sf, weights, ks, ke, logits, true).unwrap_err()
    };
    let expect = |e: dg::Error, kind: ErrorKind, part: &str| {
        assert_eq!(e.kind(), kind, "{}", e);
        assert!(e.message().contains(part), "{:?} lacks {:?}", e.message(), part);
    };

    expect(call(&fake(8, DType::BFLOAT16, &[s_q, h, d], None), &kv, &kv_sf, &weights, &ks, &ke, &logits),
           ErrorKind::InvalidArgument, "q: dtype");
    expect(call(&fake(8, fp8, &[s_q, h * d], None), &kv, &kv_sf, &weights, &ks, &ke, &logits),
           ErrorKind::InvalidArgument, "q: rank is 2");
    expect(call(&fake(8, fp8, &[s_q, 48, d], None), &kv, &kv_sf, &weights, &ks, &ke, &logits),
           ErrorKind::Unsupported, "H = 48");
    expect(call(&fake(8, fp8, &[s_q, h, 96], None), &kv, &kv_sf, &weights, &ks, &ke, &logits),
           ErrorKind::Unsupported, "D = 96");
    expect(call(&q, &kv, &fake(8, DType::FLOAT32, &[s_kv - 1], None), &weights, &ks, &ke, &logits),
           ErrorKind::InvalidArgument, "kv_sf");
    expect(call(&q, &kv, &kv_sf, &weights, &ks, &fake(8, DType::FLOAT32, &[s_q], None), &logits),
           ErrorKind::InvalidArgument, "cu_seq_len_k_end");
    // BFLOAT16 rows 300 elements (600 bytes) apart: not a multiple of 16 bytes.
    expect(call(&q, &kv, &kv_sf, &weights, &ks, &ke, &fake(8, DType::BFLOAT16, &[s_q, s_kv], Some(&[300, 1]))),
           ErrorKind::InvalidArgument, "logits: row stride");
    let null_logits = Tensor::without_data(DType::FLOAT32, &layout.sizes, Some(&layout.strides)).unwrap();
    expect(call(&q, &kv, &kv_sf, &weights, &ks, &ke, &null_logits), ErrorKind::InvalidArgument, "logits: data is NULL");

    // Empty problems pass every check in argument order, then nothing runs.
    let q0 = fake(9, fp8, &[0, h, d], None);
    let w0 = fake(10, DType::FLOAT32, &[0, h], None);
    let k0 = fake(11, DType::INT32, &[0], None);
    let l0 = fake(12, DType::BFLOAT16, &[0, s_kv], None);
    stream.fp8_mqa_logits(&q0, &kv, &kv_sf, &w0, &k0, &k0, &l0, false).unwrap();
    let kv0 = fake(13, fp8, &[0, d], None);
    let sf0 = fake(14, DType::FLOAT32, &[0], None);
    // Logits of no columns still need a row stride of whole 16 bytes: the layout query gives one.
    let empty = dg::mqa_logits_layout(s_q, 0, DType::FLOAT32).unwrap();
    let l1 = fake(15, DType::FLOAT32, &empty.sizes, Some(&empty.strides));
    stream.fp8_mqa_logits(&q, &kv0, &sf0, &weights, &ks, &ke, &l1, true).unwrap();
}

#[test]
fn offline_mqa_logits_compressed_validation() {
    let stream = Stream::offline(9, 0, 132, None).unwrap();
    let (s_q, h, d, s_kv, max_seqlen_k) = (4i64, 64i64, 128i64, 4096i64, 300i64);
    let fp8 = DType::FLOAT8_E4M3;
    let q = fake(1, fp8, &[s_q, h, d], None);
    let kv = fake(2, fp8, &[s_kv, d], None);
    let kv_sf = fake(3, DType::FLOAT32, &[s_kv], None);
    let weights = fake(4, DType::FLOAT32, &[s_q, h], None);
    let ks = fake(5, DType::INT32, &[s_q], None);
    let ke = fake(6, DType::INT32, &[s_q], None);
    let layout = dg::mqa_logits_layout(s_q, max_seqlen_k, DType::FLOAT32).unwrap();
    let logits = fake(7, DType::FLOAT32, &layout.sizes, Some(&layout.strides));
    let call = |max_seqlen_k: i64, logits: &Tensor, clean: bool| {
        stream.fp8_mqa_logits_compressed(&q, &kv, &kv_sf, &weights, &ks, &ke, max_seqlen_k, logits, clean).unwrap_err()
    };
    let expect = |e: dg::Error, kind: ErrorKind, part: &str| {
        assert_eq!(e.kind(), kind, "{}", e);
        assert!(e.message().contains(part), "{:?} lacks {:?}", e.message(), part);
    };
    expect(call(max_seqlen_k, &logits, true), ErrorKind::Unsupported, "clean_logits: 1");
    expect(call(0, &logits, false), ErrorKind::InvalidArgument, "max_seqlen_k: 0");
    expect(call(1 << 31, &logits, false), ErrorKind::InvalidArgument, "max_seqlen_k");
    // The logits have max_seqlen_k columns, not S_kv.
    expect(call(max_seqlen_k, &fake(8, DType::FLOAT32, &[s_q, s_kv], None), false), ErrorKind::InvalidArgument,
           "but max_seqlen_k is 300");
    expect(call(max_seqlen_k, &fake(8, DType::BFLOAT16, &[s_q, max_seqlen_k], Some(&[max_seqlen_k, 1])), false),
           ErrorKind::InvalidArgument, "logits: row stride");
    // A valid call gets through every check to the launch, which an offline stream refuses.
    expect(call(max_seqlen_k, &logits, false), ErrorKind::NoDevice, "offline");
}

#[test]
fn offline_paged_mqa_logits_prepare_and_validation() {
    let stream = Stream::offline(9, 0, 132, None).unwrap();
    let (b, next_n, h, d, blocks, max_blocks, max_ctx, sms) = (2i64, 1i64, 64i64, 128i64, 16i64, 8i64, 512i64, 132);
    let (fp8, i32t, f32t) = (DType::FLOAT8_E4M3, DType::INT32, DType::FLOAT32);
    let q = fake(1, fp8, &[b, next_n, h, d], None);
    let kv_cache = fake(2, DType::UINT8, &[blocks, 64, 1, d + 4], None);
    let weights = fake(3, f32t, &[b * next_n, h], None);
    let context_lens = fake(4, i32t, &[b], None);
    let block_table = fake(5, i32t, &[b, max_blocks], None);
    let schedule = fake(6, i32t, &[sms as i64 + 1, 2], None);
    let layout = dg::mqa_logits_layout(b * next_n, max_ctx, f32t).unwrap();
    let logits = fake(7, f32t, &layout.sizes, Some(&layout.strides));
    let expect = |e: dg::Error, kind: ErrorKind, part: &str| {
        assert_eq!(e.kind(), kind, "{}", e);
        assert!(e.message().contains(part), "{:?} lacks {:?}", e.message(), part);
    };

    // The schedule.
    let meta = |ctx: &Tensor, block_kv: i32, num_sms: i32, out: &Tensor| {
        stream.get_paged_mqa_logits_metadata(ctx, block_kv, num_sms, out).unwrap_err()
    };
    expect(meta(&context_lens, 32, sms, &schedule), ErrorKind::Unsupported, "block_kv: 32");
    expect(meta(&context_lens, 64, 0, &schedule), ErrorKind::InvalidArgument, "num_sms: 0");
    expect(meta(&fake(8, f32t, &[b], None), 64, sms, &schedule), ErrorKind::InvalidArgument, "context_lens: dtype");
    expect(meta(&fake(8, i32t, &[b, 3], None), 64, sms, &schedule), ErrorKind::Unsupported, "next_n = 3");
    expect(meta(&context_lens, 64, sms - 1, &schedule), ErrorKind::InvalidArgument, "schedule_meta");

    // The logits.
    let paged = |q: &Tensor, kv_cache: &Tensor, block_table: &Tensor, max_context_len: i64| {
        stream
            .fp8_paged_mqa_logits(q, kv_cache, &weights, &context_lens, block_table, &schedule, max_context_len,
                                  &logits, false)
            .unwrap_err()
    };
    expect(paged(&q, &fake(8, fp8, &[blocks, 64, 1, d + 4], None), &block_table, max_ctx),
           ErrorKind::InvalidArgument, "kv_cache: dtype");
    expect(paged(&q, &fake(8, DType::UINT8, &[blocks, 64, 1, d], None), &block_table, max_ctx),
           ErrorKind::InvalidArgument, "kv_cache");
    expect(paged(&fake(8, fp8, &[b, 3, h, d], None), &kv_cache, &block_table, max_ctx),
           ErrorKind::Unsupported, "next_n = 3");
    expect(paged(&q, &kv_cache, &block_table, -1), ErrorKind::InvalidArgument, "max_context_len: -1");
    expect(paged(&q, &kv_cache, &fake(8, i32t, &[b + 1, max_blocks], None), max_ctx),
           ErrorKind::InvalidArgument, "block_table");
    let empty = dg::mqa_logits_layout(b * next_n, 0, DType::BFLOAT16).unwrap();
    let l0 = fake(9, DType::BFLOAT16, &empty.sizes, Some(&empty.strides));
    stream
        .fp8_paged_mqa_logits(&q, &kv_cache, &weights, &context_lens, &block_table, &schedule, 0, &l0, true)
        .unwrap(); // max_context_len 0: nothing runs

    // Prepare compiles both kernels; then the valid calls get through every check to the launch,
    // which an offline stream refuses.
    let e = stream.paged_mqa_logits_prepare(48, d as i32, next_n as i32, f32t).unwrap_err();
    expect(e, ErrorKind::Unsupported, "heads: 48");
    let e = stream.paged_mqa_logits_prepare(h as i32, d as i32, 3, f32t).unwrap_err();
    expect(e, ErrorKind::Unsupported, "next_n: 3");
    let e = stream.paged_mqa_logits_prepare(h as i32, d as i32, next_n as i32, DType::FLOAT16).unwrap_err();
    expect(e, ErrorKind::InvalidArgument, "logits_dtype");
    let before = dg::jit_stats().unwrap();
    stream.paged_mqa_logits_prepare(h as i32, d as i32, next_n as i32, f32t).unwrap();
    let after = dg::jit_stats().unwrap();
    assert!(
        after.compiled + after.loaded_from_disk + after.memory_hits
            >= before.compiled + before.loaded_from_disk + before.memory_hits + 2,
        "the schedule and paged kernels were not both prepared: {:?} -> {:?}",
        before,
        after
    );
    expect(stream.get_paged_mqa_logits_metadata(&context_lens, 64, sms, &schedule).unwrap_err(),
           ErrorKind::NoDevice, "offline");
    expect(
        stream
            .fp8_paged_mqa_logits(&q, &kv_cache, &weights, &context_lens, &block_table, &schedule, max_ctx, &logits,
                                  true)
            .unwrap_err(),
        ErrorKind::NoDevice,
        "offline",
    );
}

#[test]
fn gemm_epilogue_struct_and_options() {
    let e = GemmEpilogue::new();
    assert_eq!(e.as_raw().struct_size, std::mem::size_of::<sys::dg_gemm_epilogue>());
    assert_eq!(e.as_raw().activation, sys::DG_ACTIVATION_NONE);
    assert!(e.as_raw().bias.is_null() && e.as_raw().d_scales.is_null());
    assert!(GemmOptions::new().as_raw().epilogue.is_null());
    let bias = fake(1, DType::FLOAT32, &[256], None);
    let scales = fake(2, DType::FLOAT32, &[128, 1], Some(&[1, 128]));
    let e = GemmEpilogue::new()
        .activation(Activation::SWIGLU)
        .bias(&bias)
        .d_scales(&scales)
        .pow2_scales(true)
        .amax_floor(1e-6);
    let raw = e.as_raw();
    assert_eq!((raw.activation, raw.pow2_scales, raw.amax_floor), (sys::DG_ACTIVATION_SWIGLU, 1, 1e-6));
    assert_eq!((raw.bias, raw.d_scales), (bias.as_raw() as *const _, scales.as_raw() as *const _));
    let o = GemmOptions::new().alpha(2.0).epilogue(&e);
    assert_eq!(o.as_raw().epilogue, e.as_raw() as *const _);
    assert!(o.no_epilogue().as_raw().epilogue.is_null());
}

#[test]
fn offline_gemm_epilogue_validation() {
    let stream = Stream::offline(9, 0, 132, None).unwrap();
    let (m, n, k) = (128, 512, 256);
    let a = fake(1, DType::BFLOAT16, &[m, k], None);
    let b = fake(2, DType::BFLOAT16, &[n, k], None);
    let d = fake(3, DType::BFLOAT16, &[m, n], None);
    let d8 = fake(4, DType::FLOAT8_E4M3, &[m, n / 2], None);
    let short_bias = fake(5, DType::FLOAT32, &[n - 8], None);
    let expect = |e: &GemmEpilogue<'_>, d: &Tensor, c: Option<&Tensor>, kind: ErrorKind, what: &str| {
        let err = stream.bf16_gemm_nt(&a, &b, d, c, Some(&GemmOptions::new().epilogue(e))).unwrap_err();
        assert_eq!(err.kind(), kind, "{}", err);
        assert!(err.message().contains(what), "{}", err);
    };
    // libdg reads every field of the struct the options point to.
    expect(&GemmEpilogue::new().bias(&short_bias), &d, None, ErrorKind::InvalidArgument, "options.epilogue.bias");
    expect(&GemmEpilogue::new().activation(Activation::from_raw(5)), &d, None, ErrorKind::InvalidArgument,
           "options.epilogue.activation");
    expect(&GemmEpilogue::new().amax_floor(1e31), &d, None, ErrorKind::InvalidArgument, "options.epilogue.amax_floor");
    expect(&GemmEpilogue::new().activation(Activation::SWIGLU), &d8, None, ErrorKind::InvalidArgument,
           "options.epilogue.d_scales");
    // SwiGLU halves d's columns: the full-width d is refused.
    expect(&GemmEpilogue::new().activation(Activation::SWIGLU), &d, None, ErrorKind::InvalidArgument, "d");
    expect(&GemmEpilogue::new(), &d, Some(&d), ErrorKind::Unsupported, "options.epilogue");
    // An FP8 d without an epilogue.
    let err = stream.bf16_gemm_nt(&a, &b, &d8, None, None).unwrap_err();
    assert!(err.message().contains("FLOAT8_E4M3 needs a fused epilogue"), "{}", err);
    // The prepare calls check the epilogue as the calls do (here: no C term with an epilogue).
    let swiglu = GemmEpilogue::new().activation(Activation::SWIGLU);
    let with = GemmOptions::new().epilogue(&swiglu);
    let err = stream.gemm_prepare(DType::BFLOAT16, GemmLayout::NT, m, n, k, DType::BFLOAT16, true, Some(&with)).unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Unsupported, "{}", err);
    assert!(err.message().contains("C term"), "{}", err);
}

#[test]
fn offline_swiglu_interleave_validation() {
    let stream = Stream::offline(9, 0, 132, None).unwrap();
    let src = fake(1, DType::FLOAT8_E4M3, &[2, 512, 256], None);
    let dst = fake(2, DType::FLOAT8_E4M3, &[2, 512, 256], None);
    let expect = |src: &Tensor, dst: &Tensor, block: i64, what: &str| {
        let err = stream.swiglu_interleave(src, dst, block).unwrap_err();
        assert_eq!(err.kind(), ErrorKind::InvalidArgument, "{}", err);
        assert!(err.message().contains(what), "{}", err);
    };
    expect(&src, &dst, 0, "block: 0");
    expect(&src, &dst, 96, "block: 96 does not divide I = 256");
    expect(&src, &fake(3, DType::FLOAT8_E4M3, &[2, 256, 256], None), 128, "dst: shape");
    expect(&src, &fake(3, DType::BFLOAT16, &[2, 512, 256], None), 128, "dst:");
    expect(&src, &src, 128, "dst: overlaps src");
    // Nothing to copy: done without the device.
    let empty = fake(4, DType::FLOAT32, &[2, 0, 4], None);
    stream.swiglu_interleave(&empty, &fake(5, DType::FLOAT32, &[2, 0, 4], None), 1).unwrap();
}

#[test]
fn offline_tune_validates_and_writes_nothing() {
    let dir = scratch_dir("tune");
    let table = dir.join("table.txt");
    let mut config = Config::new().unwrap();
    config.set_string(ConfigKey::TUNING_TABLE, table.to_str().unwrap()).unwrap();
    let stream = Stream::offline(9, 0, 132, Some(&config)).unwrap();
    let list = "dense fp8 nt n=7168 k=2048 m=128,4096\nmasked fp8 n=4096 k=7168 g=32 m=8\n";
    let mut lines = Vec::new();
    let mut progress = |_done: i64, _total: i64, line: &str| lines.push(line.to_string());
    let e = stream.tune(list, &TuneOptions::default(), Some(&mut progress)).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::NoDevice, "{}", e);
    let e = stream.tune("dense fp8 nt n=7168 m=1\n", &TuneOptions::default(), None).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::InvalidArgument, "{}", e);
    assert!(e.message().contains("problems: line 1"), "{}", e);
    let bad = TuneOptions { candidates: 17, ..TuneOptions::default() };
    let e = stream.tune(list, &bad, None).unwrap_err();
    assert!(e.message().contains("options.candidates: 17"), "{}", e);
    let e = stream.tune("dense\0", &TuneOptions::default(), None).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::InvalidArgument, "{}", e);
    assert!(lines.is_empty());
    assert!(!table.exists());
}

#[test]
fn offline_k_grouped_quantization_validation() {
    let stream = Stream::offline(9, 0, 132, None).unwrap();
    let ks = [100i64, 30];
    assert_eq!(dg::k_grouped_padded_ks(&ks), vec![128, 128]);
    let (x, out, flat, sf, unpadded, ks_t) = unsafe {
        (
            Tensor::new(fake_device_ptr(1), DType::BFLOAT16, &[130, 64], None).unwrap(),
            Tensor::new(fake_device_ptr(2), DType::FLOAT8_E4M3, &[256, 64], None).unwrap(),
            Tensor::new(fake_device_ptr(2), DType::FLOAT8_E4M3, &[256 * 64], None).unwrap(),
            Tensor::new(fake_device_ptr(3), DType::FLOAT32, &[64, 2], Some(&[1, 64])).unwrap(),
            Tensor::new(fake_device_ptr(2), DType::FLOAT8_E4M3, &[130, 64], None).unwrap(),
            Tensor::new(fake_device_ptr(4), DType::INT32, &[2], None).unwrap(),
        )
    };
    // Valid calls get past validation: the offline device compiles the kernel and cannot run it.
    let o = QuantOptions::new().pow2_scales(true);
    for out in [&out, &flat] {
        let e = stream.quantize_fp8_k_grouped(&x, out, &sf, &ks, Some(&ks_t), Some(&o)).unwrap_err();
        assert_eq!(e.kind(), ErrorKind::NoDevice, "{}", e);
    }
    let e = stream.quantize_fp8_k_grouped_device(&x, &out, &sf, &ks_t, 2, None).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::NoDevice, "{}", e);
    // Codes not padded per group.
    let e = stream.quantize_fp8_k_grouped(&x, &unpadded, &sf, &ks, None, None).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::InvalidArgument, "{}", e);
    assert!(e.message().starts_with("out:"), "{}", e);
    // Counts that do not sum to x's rows.
    let e = stream.quantize_fp8_k_grouped(&x, &out, &sf, &[100, 31], None, None).unwrap_err();
    assert!(e.message().starts_with("x:"), "{}", e);
    // Device counts: ks_tensor must have num_groups entries.
    let e = stream.quantize_fp8_k_grouped_device(&x, &out, &sf, &ks_t, 3, None).unwrap_err();
    assert!(e.message().starts_with("ks_tensor:"), "{}", e);
}

#[test]
fn offline_fp8_gemm_nt_skip_head_mid_validation() {
    let stream = Stream::offline(9, 0, 132, None).unwrap();
    let (m, n, k) = (128i64, 512i64, 512i64);
    let a = fake(1, DType::FLOAT8_E4M3, &[m, k], None);
    let sfa = fake(2, DType::FLOAT32, &[m, k / 128], Some(&[1, m]));
    let b = fake(3, DType::FLOAT8_E4M3, &[n, k], None);
    let sfb = fake(4, DType::FLOAT32, &[n / 128, k / 128], None);
    let d = fake(5, DType::BFLOAT16, &[m, 2 * 320], None);
    // A negative part.
    let e = stream.fp8_gemm_nt_skip_head_mid(&a, &sfa, &b, &sfb, &d, -8, 64, 264, None).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::InvalidArgument, "{}", e);
    assert!(e.message().starts_with("left, mid, right"), "{}", e);
    // Heads of 96 + 96 do not divide N = 512.
    let e = stream.fp8_gemm_nt_skip_head_mid(&a, &sfa, &b, &sfb, &d, 96, 64, 96, None).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::InvalidArgument, "{}", e);
    // d sized for another mid.
    let e = stream.fp8_gemm_nt_skip_head_mid(&a, &sfa, &b, &sfb, &d, 128, 32, 128, None).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::InvalidArgument, "{}", e);
    assert!(e.message().starts_with("d:"), "{}", e);
}

#[test]
fn offline_fp8_einsum_validation() {
    let stream = Stream::offline(9, 0, 132, None).unwrap();
    let (b, h, r, d) = (8i64, 2i64, 256i64, 128i64);
    let fp8 = DType::FLOAT8_E4M3;
    let a = fake(1, fp8, &[b, h, r], None);
    // sfa: each head's [b, r / 128] scales MN-major, K blocks align(b, 4) = 8 apart.
    let sfa = fake(2, DType::FLOAT32, &[b, h, r / 128], Some(&[1, 16, 8]));
    let w = fake(3, fp8, &[h, d, r], None);
    let sfb = fake(4, DType::FLOAT32, &[h, 1, r / 128], None);
    let out = fake(5, DType::BFLOAT16, &[b, h, d], None);
    let expect = |e: dg::Error, kind: ErrorKind, part: &str| {
        assert_eq!(e.kind(), kind, "{}", e);
        assert!(e.message().contains(part), "{:?} lacks {:?}", e.message(), part);
    };
    let e = stream.fp8_einsum("bhr,hdr->bhd", &a, &sfa, &w, &sfb, &out, Some(&out), None).unwrap_err();
    expect(e, ErrorKind::Unsupported, "c:");
    let e = stream.fp8_einsum("bhd,hdr->bhr", &a, &sfa, &w, &sfb, &out, None, None).unwrap_err();
    expect(e, ErrorKind::Unsupported, "SM100");
    // per_token_cast_to_fp8's row-major scales are not the layout the kernel reads.
    let row_major = fake(6, DType::FLOAT32, &[b, h, r / 128], None);
    let e = stream.fp8_einsum("bhr,hdr->bhd", &a, &row_major, &w, &sfb, &out, None, None).unwrap_err();
    expect(e, ErrorKind::InvalidArgument, "sfa:");
    let e = stream.fp8_einsum("bhr,hdr\0", &a, &sfa, &w, &sfb, &out, None, None).unwrap_err();
    expect(e, ErrorKind::InvalidArgument, "expr");
    let e = stream.fp8_einsum_prepare("bhr,hdr->bhd", [b, h, r], [h, d, r + 128], None).unwrap_err();
    expect(e, ErrorKind::InvalidArgument, "b_sizes");
    let e = stream.fp8_einsum_prepare("bmk,bnk->mn", [b, h, r], [h, d, r], None).unwrap_err();
    expect(e, ErrorKind::Unsupported, "expr");
}
