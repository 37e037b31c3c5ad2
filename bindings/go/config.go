package dg

// #include "calls.h"
import "C"

import (
	"runtime"
	"strings"
	"unsafe"
)

// ConfigKey is a setting of a Config (dg_config_key).
type ConfigKey int32

// The settings of dg.h.
const (
	// int: cap on the SMs a kernel may use; 0 = the process-wide value (SetNumSMs). Bounds [0, 1024].
	ConfigNumSMs ConfigKey = C.DG_CONFIG_NUM_SMS
	// int: tensor-core utilisation target in percent, [1, 100]; only SM100 BF16 kernels honour < 100.
	ConfigTCUtil ConfigKey = C.DG_CONFIG_TC_UTIL
	// int: 1 = launch with Programmatic Dependent Launch, 0 = off (default).
	ConfigPDL ConfigKey = C.DG_CONFIG_PDL
	// string: JIT cache root (entries under <root>/libdg/); "" keeps kernels in memory only.
	ConfigCacheDir ConfigKey = C.DG_CONFIG_CACHE_DIR
	// int: CompilerNVRTC (default) or CompilerNVCC.
	ConfigCompiler ConfigKey = C.DG_CONFIG_COMPILER
	// int: 1 = log each distinct problem's kernel configuration once (at warn level).
	ConfigPrintConfigs ConfigKey = C.DG_CONFIG_PRINT_CONFIGS
	// int: a LogLevel applied to the process-wide logger.
	ConfigLogLevel ConfigKey = C.DG_CONFIG_LOG_LEVEL
	// string: the GEMM tuning table (docs/tuning.md); "" = beside the JIT cache, "off" = none.
	ConfigTuningTable ConfigKey = C.DG_CONFIG_TUNING_TABLE
)

// Values of ConfigCompiler.
const (
	CompilerNVRTC = C.DG_COMPILER_NVRTC // NVRTC, in process (the default)
	CompilerNVCC  = C.DG_COMPILER_NVCC  // the nvcc executable
)

// Config holds settings a Stream copies when it is created (dg_config): SM cap, tensor-core
// utilisation, PDL, JIT cache directory, compiler, print-configs, log level. A new config takes
// its defaults from the environment (DG_NUM_SMS, DG_TC_UTIL, DG_PDL, DG_JIT_CACHE_DIR,
// DG_JIT_USE_NVRTC, DG_PRINT_CONFIGS, DG_LOG_LEVEL); setters check bounds (ConfigBounds). Do not
// call Set* concurrently with other uses of the same Config.
type Config struct {
	ptr *C.dg_config
}

func newConfig(p *C.dg_config) *Config {
	c := &Config{ptr: p}
	runtime.SetFinalizer(c, (*Config).Close)
	return c
}

// NewConfig returns a config with the defaults of the environment (dg_config_create).
func NewConfig() (*Config, error) {
	var p *C.dg_config
	if err := check(C.dgw_config_create(&p)); err != nil {
		return nil, err
	}
	return newConfig(p), nil
}

// Clone returns a new config with every setting of c (dg_config_clone).
func (c *Config) Clone() (*Config, error) {
	var p *C.dg_config
	err := check(C.dgw_config_clone(c.ptr, &p))
	runtime.KeepAlive(c)
	if err != nil {
		return nil, err
	}
	return newConfig(p), nil
}

// SetInt sets an int setting; a value outside ConfigBounds is an ErrInvalidArgument naming the key.
func (c *Config) SetInt(key ConfigKey, value int64) error {
	err := check(C.dgw_config_set_int(c.ptr, C.dg_config_key(key), C.int64_t(value)))
	runtime.KeepAlive(c)
	return err
}

// GetInt returns an int setting.
func (c *Config) GetInt(key ConfigKey) (int64, error) {
	var v C.int64_t
	err := check(C.dgw_config_get_int(c.ptr, C.dg_config_key(key), &v))
	runtime.KeepAlive(c)
	return int64(v), err
}

// SetString sets a string setting (ConfigCacheDir, ConfigTuningTable).
func (c *Config) SetString(key ConfigKey, value string) error {
	if strings.IndexByte(value, 0) >= 0 {
		return invalid("value: contains a NUL byte (a C string was expected)")
	}
	cs := C.CString(value)
	defer C.free(unsafe.Pointer(cs))
	err := check(C.dgw_config_set_string(c.ptr, C.dg_config_key(key), cs))
	runtime.KeepAlive(c)
	return err
}

// GetString returns a string setting.
func (c *Config) GetString(key ConfigKey) (string, error) {
	defer runtime.KeepAlive(c)
	var required C.size_t
	if err := check(C.dgw_config_get_string(c.ptr, C.dg_config_key(key), nil, 0, &required)); err != nil {
		return "", err
	}
	for {
		buf := make([]byte, int(required)+1)
		err := check(C.dgw_config_get_string(c.ptr, C.dg_config_key(key), (*C.char)(unsafe.Pointer(&buf[0])),
			C.size_t(len(buf)), &required))
		if err != nil {
			return "", err
		}
		if int(required) <= len(buf) { // the value fit (a concurrent SetString may have grown it)
			return C.GoString((*C.char)(unsafe.Pointer(&buf[0]))), nil
		}
	}
}

// ConfigBounds returns the inclusive bounds of an int setting (dg_config_get_bounds).
func ConfigBounds(key ConfigKey) (min, max int64, err error) {
	var lo, hi C.int64_t
	err = check(C.dgw_config_get_bounds(C.dg_config_key(key), &lo, &hi))
	return int64(lo), int64(hi), err
}

// Close destroys the config. It is safe to call more than once; streams created from it keep
// their own copy.
func (c *Config) Close() error {
	if c.ptr != nil {
		C.dg_config_destroy(c.ptr)
		c.ptr = nil
		runtime.SetFinalizer(c, nil)
	}
	return nil
}

func (c *Config) raw() *C.dg_config {
	if c == nil {
		return nil
	}
	return c.ptr
}

// SetNumSMs sets the process-wide SM cap (dg_set_num_sms, as DeepGEMM's set_num_sms); 0 resets
// it to every SM of the device.
func SetNumSMs(n int) error {
	var a cArgs
	sms := a.int32("num_sms", n)
	if a.err != nil {
		return a.err
	}
	return check(C.dgw_set_num_sms(sms))
}

// NumSMs returns the process-wide SM cap (dg_get_num_sms): the value set, else the SM count of
// device 0, else 0 without a device.
func NumSMs() int {
	return int(C.dg_get_num_sms())
}

// SetTCUtil sets the process-wide tensor-core utilisation (dg_set_tc_util), a ratio in (0, 1];
// 0 resets it to 1.
func SetTCUtil(ratio float64) error {
	return check(C.dgw_set_tc_util(C.double(ratio)))
}

// TCUtil returns the process-wide tensor-core utilisation ratio (dg_get_tc_util).
func TCUtil() float64 {
	return float64(C.dg_get_tc_util())
}
