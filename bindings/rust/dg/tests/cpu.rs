//! The binding on a machine without a GPU (also correct with one): version, configuration,
//! errors with libdg's messages, NoDevice, and the offline stream compiling a kernel.

use std::fs;
use std::os::raw::c_void;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::{SystemTime, UNIX_EPOCH};

use dg::{
    sys, Config, ConfigKey, DType, ErrorKind, GemmLayout, GemmOptions, LogLevel, MGroupedLayout, SfRecipe, Stream,
    Tensor,
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
