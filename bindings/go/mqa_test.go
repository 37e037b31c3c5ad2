package dg

import (
	"fmt"
	"testing"
)

func TestMQALogitsLayout(t *testing.T) {
	// Rows padded to 1024 bytes: 256 Float32 or 512 BFloat16 elements.
	for _, dt := range []struct {
		dtype DType
		size  int64
	}{{Float32, 4}, {BFloat16, 2}} {
		for _, shape := range [][2]int64{{3, 1000}, {1, 1}, {5, 1024 / dt.size}, {2, 1024/dt.size + 1}, {0, 7}, {4, 0}} {
			seqLen, seqLenKV := shape[0], shape[1]
			l, err := MQALogitsLayout(seqLen, seqLenKV, dt.dtype)
			stride := (seqLenKV*dt.size + 1023) / 1024 * 1024 / dt.size
			want := fmt.Sprint([]int64{seqLen, seqLenKV}, []int64{stride, 1}, seqLen*stride*dt.size)
			if err != nil || fmt.Sprint(l.Sizes, l.Strides, l.Bytes) != want {
				t.Errorf("MQALogitsLayout(%d, %d, %v) = %+v, %v; want %s", seqLen, seqLenKV, dt.dtype, l, err, want)
			}
		}
	}
	if l, _ := MQALogitsLayout(3, 1000, Float32); fmt.Sprint(l.Strides) != "[1024 1]" {
		t.Errorf("MQALogitsLayout(3, 1000, Float32).Strides = %v", l.Strides)
	}
	_, err := MQALogitsLayout(4, 1000, Float16)
	wantError(t, err, ErrInvalidArgument, "logits_dtype")
	_, err = MQALogitsLayout(-1, 1000, Float32)
	wantError(t, err, ErrInvalidArgument, "seq_len: -1")
	_, err = MQALogitsLayout(4, -2, BFloat16)
	wantError(t, err, ErrInvalidArgument, "seq_len_kv: -2")
	_, err = MQALogitsLayout(1<<62, 1<<20, Float32) // an allocation size past int64
	wantError(t, err, ErrInvalidArgument, "overflows")
}

func offlineStream(t *testing.T) *Stream {
	t.Helper()
	s, err := NewOfflineStream(9, 0, 132, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func TestOfflineMQALogitsValidation(t *testing.T) {
	s := offlineStream(t)
	const sQ, h, d, sKV = 4, 64, 128, 256
	q := mustTensor(t, fakeDevicePtr(1), Float8E4M3, []int64{sQ, h, d}, nil)
	kv := mustTensor(t, fakeDevicePtr(2), Float8E4M3, []int64{sKV, d}, nil)
	kvSF := mustTensor(t, fakeDevicePtr(3), Float32, []int64{sKV}, nil)
	weights := mustTensor(t, fakeDevicePtr(4), Float32, []int64{sQ, h}, nil)
	ks := mustTensor(t, fakeDevicePtr(5), Int32, []int64{sQ}, nil)
	ke := mustTensor(t, fakeDevicePtr(6), Int32, []int64{sQ}, nil)
	layout, err := MQALogitsLayout(sQ, sKV, Float32)
	if err != nil {
		t.Fatal(err)
	}
	logits := mustTensor(t, fakeDevicePtr(7), Float32, layout.Sizes, layout.Strides)
	other := func(dtype DType, sizes ...int64) *Tensor { return mustTensor(t, fakeDevicePtr(8), dtype, sizes, nil) }

	wantError(t, s.FP8MQALogits(other(BFloat16, sQ, h, d), kv, kvSF, weights, ks, ke, logits, true),
		ErrInvalidArgument, "q: dtype")
	wantError(t, s.FP8MQALogits(other(Float8E4M3, sQ, h*d), kv, kvSF, weights, ks, ke, logits, true),
		ErrInvalidArgument, "q: rank is 2")
	wantError(t, s.FP8MQALogits(other(Float8E4M3, sQ, 48, d), kv, kvSF, weights, ks, ke, logits, true),
		ErrUnsupported, "H = 48")
	wantError(t, s.FP8MQALogits(other(Float8E4M3, sQ, h, 96), kv, kvSF, weights, ks, ke, logits, true),
		ErrUnsupported, "D = 96")
	wantError(t, s.FP8MQALogits(q, kv, other(Float32, sKV-1), weights, ks, ke, logits, true), ErrInvalidArgument, "kv_sf")
	wantError(t, s.FP8MQALogits(q, kv, kvSF, weights, ks, other(Float32, sQ), logits, true), ErrInvalidArgument,
		"cu_seq_len_k_end")
	// BFloat16 rows 300 elements (600 bytes) apart: not a multiple of 16 bytes.
	badRows := mustTensor(t, fakeDevicePtr(8), BFloat16, []int64{sQ, sKV}, []int64{300, 1})
	wantError(t, s.FP8MQALogits(q, kv, kvSF, weights, ks, ke, badRows, true), ErrInvalidArgument, "logits: row stride")
	nullLogits := mustTensor(t, 0, Float32, layout.Sizes, layout.Strides)
	wantError(t, s.FP8MQALogits(q, kv, kvSF, weights, ks, ke, nullLogits, true), ErrInvalidArgument,
		"logits: data is NULL")

	// Empty problems pass every check in argument order, then nothing runs.
	q0 := mustTensor(t, fakeDevicePtr(9), Float8E4M3, []int64{0, h, d}, nil)
	w0 := mustTensor(t, fakeDevicePtr(10), Float32, []int64{0, h}, nil)
	k0 := mustTensor(t, fakeDevicePtr(11), Int32, []int64{0}, nil)
	l0 := mustTensor(t, fakeDevicePtr(12), BFloat16, []int64{0, sKV}, nil)
	if err := s.FP8MQALogits(q0, kv, kvSF, w0, k0, k0, l0, false); err != nil {
		t.Errorf("S_q = 0: %v", err)
	}
	kv0 := mustTensor(t, fakeDevicePtr(13), Float8E4M3, []int64{0, d}, nil)
	sf0 := mustTensor(t, fakeDevicePtr(14), Float32, []int64{0}, nil)
	// Logits of no columns still need a row stride of whole 16 bytes: the layout query gives one.
	empty, err := MQALogitsLayout(sQ, 0, Float32)
	if err != nil {
		t.Fatal(err)
	}
	l1 := mustTensor(t, fakeDevicePtr(15), Float32, empty.Sizes, empty.Strides)
	if err := s.FP8MQALogits(q, kv0, sf0, weights, ks, ke, l1, true); err != nil {
		t.Errorf("S_kv = 0: %v", err)
	}
}

func TestOfflineMQALogitsCompressed(t *testing.T) {
	s := offlineStream(t)
	const sQ, h, d, sKV, maxSeqLenK = 4, 64, 128, 4096, 300
	q := mustTensor(t, fakeDevicePtr(1), Float8E4M3, []int64{sQ, h, d}, nil)
	kv := mustTensor(t, fakeDevicePtr(2), Float8E4M3, []int64{sKV, d}, nil)
	kvSF := mustTensor(t, fakeDevicePtr(3), Float32, []int64{sKV}, nil)
	weights := mustTensor(t, fakeDevicePtr(4), Float32, []int64{sQ, h}, nil)
	ks := mustTensor(t, fakeDevicePtr(5), Int32, []int64{sQ}, nil)
	ke := mustTensor(t, fakeDevicePtr(6), Int32, []int64{sQ}, nil)
	layout, err := MQALogitsLayout(sQ, maxSeqLenK, BFloat16)
	if err != nil {
		t.Fatal(err)
	}
	logits := mustTensor(t, fakeDevicePtr(7), BFloat16, layout.Sizes, layout.Strides)
	call := func(maxSeqLenK int64, logits *Tensor, clean bool) error {
		return s.FP8MQALogitsCompressed(q, kv, kvSF, weights, ks, ke, maxSeqLenK, logits, clean)
	}
	wantError(t, call(maxSeqLenK, logits, true), ErrUnsupported, "clean_logits: 1")
	wantError(t, call(0, logits, false), ErrInvalidArgument, "max_seqlen_k: 0")
	wantError(t, call(1<<31, logits, false), ErrInvalidArgument, "max_seqlen_k")
	// The logits have max_seqlen_k columns, not S_kv.
	full := mustTensor(t, fakeDevicePtr(8), BFloat16, []int64{sQ, sKV}, nil)
	wantError(t, call(maxSeqLenK, full, false), ErrInvalidArgument, "logits: size(1) is 4096 but max_seqlen_k is 300")
	badRows := mustTensor(t, fakeDevicePtr(8), BFloat16, []int64{sQ, maxSeqLenK}, []int64{maxSeqLenK, 1})
	wantError(t, call(maxSeqLenK, badRows, false), ErrInvalidArgument, "logits: row stride")
	// A valid call gets through every check to the launch, which an offline stream refuses.
	wantError(t, call(maxSeqLenK, logits, false), ErrNoDevice, "offline")
}

func TestOfflinePagedMQALogits(t *testing.T) {
	s := offlineStream(t)
	const b, nextN, h, d, blocks, maxBlocks, maxCtx, sms = 2, 1, 64, 128, 16, 8, 512, 132
	q := mustTensor(t, fakeDevicePtr(1), Float8E4M3, []int64{b, nextN, h, d}, nil)
	kvCache := mustTensor(t, fakeDevicePtr(2), Uint8, []int64{blocks, 64, 1, d + 4}, nil)
	weights := mustTensor(t, fakeDevicePtr(3), Float32, []int64{b * nextN, h}, nil)
	contextLens := mustTensor(t, fakeDevicePtr(4), Int32, []int64{b}, nil)
	blockTable := mustTensor(t, fakeDevicePtr(5), Int32, []int64{b, maxBlocks}, nil)
	schedule := mustTensor(t, fakeDevicePtr(6), Int32, []int64{sms + 1, 2}, nil)
	layout, err := MQALogitsLayout(b*nextN, maxCtx, Float32)
	if err != nil {
		t.Fatal(err)
	}
	logits := mustTensor(t, fakeDevicePtr(7), Float32, layout.Sizes, layout.Strides)
	other := func(dtype DType, sizes ...int64) *Tensor { return mustTensor(t, fakeDevicePtr(8), dtype, sizes, nil) }

	// The schedule.
	wantError(t, s.GetPagedMQALogitsMetadata(contextLens, 32, sms, schedule), ErrUnsupported, "block_kv: 32")
	wantError(t, s.GetPagedMQALogitsMetadata(contextLens, 64, 0, schedule), ErrInvalidArgument, "num_sms: 0")
	wantError(t, s.GetPagedMQALogitsMetadata(contextLens, 64, 1<<32+sms, schedule), ErrInvalidArgument, "num_sms",
		"int32")
	wantError(t, s.GetPagedMQALogitsMetadata(other(Float32, b), 64, sms, schedule), ErrInvalidArgument,
		"context_lens: dtype")
	wantError(t, s.GetPagedMQALogitsMetadata(other(Int32, b, 3), 64, sms, schedule), ErrUnsupported, "next_n = 3")
	wantError(t, s.GetPagedMQALogitsMetadata(contextLens, 64, sms-1, schedule), ErrInvalidArgument, "schedule_meta")

	// The logits.
	paged := func(q, kvCache, blockTable *Tensor, maxContextLen int64) error {
		return s.FP8PagedMQALogits(q, kvCache, weights, contextLens, blockTable, schedule, maxContextLen, logits, false)
	}
	wantError(t, paged(q, other(Float8E4M3, blocks, 64, 1, d+4), blockTable, maxCtx), ErrInvalidArgument,
		"kv_cache: dtype")
	wantError(t, paged(q, other(Uint8, blocks, 64, 1, d), blockTable, maxCtx), ErrInvalidArgument, "kv_cache")
	wantError(t, paged(other(Float8E4M3, b, 3, h, d), kvCache, blockTable, maxCtx), ErrUnsupported, "next_n = 3")
	wantError(t, paged(q, kvCache, blockTable, -1), ErrInvalidArgument, "max_context_len: -1")
	wantError(t, paged(q, kvCache, other(Int32, b+1, maxBlocks), maxCtx), ErrInvalidArgument, "block_table")
	empty, err := MQALogitsLayout(b*nextN, 0, BFloat16)
	if err != nil {
		t.Fatal(err)
	}
	l0 := mustTensor(t, fakeDevicePtr(9), BFloat16, empty.Sizes, empty.Strides)
	if err := s.FP8PagedMQALogits(q, kvCache, weights, contextLens, blockTable, schedule, 0, l0, true); err != nil {
		t.Errorf("max_context_len = 0: %v", err) // nothing runs
	}

	// Prepare compiles both kernels; then the valid calls get through every check to the launch,
	// which an offline stream refuses.
	wantError(t, s.PagedMQALogitsPrepare(48, d, nextN, Float32), ErrUnsupported, "heads: 48")
	wantError(t, s.PagedMQALogitsPrepare(h, d, 3, Float32), ErrUnsupported, "next_n: 3")
	wantError(t, s.PagedMQALogitsPrepare(h, 1<<32+d, nextN, Float32), ErrInvalidArgument, "head_dim", "int32")
	wantError(t, s.PagedMQALogitsPrepare(h, d, nextN, Float16), ErrInvalidArgument, "logits_dtype")
	before, _ := GetJitStats()
	if err := s.PagedMQALogitsPrepare(h, d, nextN, Float32); err != nil {
		t.Fatal(err)
	}
	if after, _ := GetJitStats(); after.Compiled+after.LoadedFromDisk+after.MemoryHits <
		before.Compiled+before.LoadedFromDisk+before.MemoryHits+2 {
		t.Errorf("the schedule and paged kernels were not both prepared: %+v -> %+v", before, after)
	}
	wantError(t, s.GetPagedMQALogitsMetadata(contextLens, 64, sms, schedule), ErrNoDevice, "offline")
	wantError(t, s.FP8PagedMQALogits(q, kvCache, weights, contextLens, blockTable, schedule, maxCtx, logits, true),
		ErrNoDevice, "offline")
}
