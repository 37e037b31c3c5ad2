package dg

// #include <stdlib.h>
// #include "calls.h"
import "C"

import (
	"strings"
	"unsafe"
)

// TuneOptions are the options of Tune (dg_tune_options); the zero value gives libdg's defaults
// (4 candidates, 7 repetitions, the stream's table, other entries kept).
type TuneOptions struct {
	Candidates  int32  // configs timed per problem, 1..16; 0 = 4
	Repetitions int32  // timed runs of each config (medians compared), 1..100; 0 = 7
	TablePath   string // the table to write; "" = the stream's (DG_TUNING_TABLE, else beside the JIT cache)
	Replace     bool   // write only this list's problems (default: keep the table's others)
}

// Tune times the heuristic's best-ranked kernel configs of each GEMM problem of problems (the
// text of a problem list, e.g. "dense fp8 nt n=24576 k=1536 m=128,4096\n"; docs/tuning.md) on the
// stream's GPU and writes the fastest into the tuning table that later GEMM calls consult
// (dg_tune). Each problem's line is logged at info level (SetLogCallback). Returns the number of
// problems tuned.
func (s *Stream) Tune(problems string, opts *TuneOptions) (int64, error) {
	if opts == nil {
		opts = &TuneOptions{}
	}
	if strings.IndexByte(problems, 0) >= 0 || strings.IndexByte(opts.TablePath, 0) >= 0 {
		return 0, invalid("problems, options.table_path: contain a NUL byte (C strings were expected)")
	}
	o := C.dgw_tune_options_init()
	o.candidates = C.int32_t(opts.Candidates)
	o.repetitions = C.int32_t(opts.Repetitions)
	o.replace = cBool(opts.Replace)
	if opts.TablePath != "" {
		path := C.CString(opts.TablePath)
		defer C.free(unsafe.Pointer(path))
		o.table_path = path
	}
	text := C.CString(problems)
	defer C.free(unsafe.Pointer(text))
	var tuned C.int64_t
	err := check(C.dgw_tune(s.ptr, text, &o, &tuned))
	keep(s)
	return int64(tuned), err
}

// PrepareProblems compiles into the JIT cache (on a GPU stream also loads) the kernels the calls
// of every problem of problems (a problem list's text) run with default options: the stream's
// tuning table's config for a tuned problem, else the heuristic's (dg_prepare_problems). On a
// stream from NewOfflineStreamNamed it warms a cache for that GPU without one. Returns the number
// of problems prepared.
func (s *Stream) PrepareProblems(problems string) (int64, error) {
	if strings.IndexByte(problems, 0) >= 0 {
		return 0, invalid("problems: contains a NUL byte (a C string was expected)")
	}
	text := C.CString(problems)
	defer C.free(unsafe.Pointer(text))
	var prepared C.int64_t
	err := check(C.dgw_prepare_problems(s.ptr, text, &prepared))
	keep(s)
	return int64(prepared), err
}
