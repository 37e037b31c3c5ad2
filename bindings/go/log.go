package dg

// #include "calls.h"
// void dgGoLogCallback(int32_t level, char* message, void* user_data);
// static inline dg_log_callback dgw_go_log_callback(void) { return (dg_log_callback)dgGoLogCallback; }
import "C"

import "sync"

// LogLevel is a level of libdg's logger (DG_LOG_*); messages at or above the level are emitted.
type LogLevel int32

// The levels of dg.h.
const (
	LogTrace LogLevel = C.DG_LOG_TRACE
	LogDebug LogLevel = C.DG_LOG_DEBUG
	LogInfo  LogLevel = C.DG_LOG_INFO
	LogWarn  LogLevel = C.DG_LOG_WARN // the default
	LogError LogLevel = C.DG_LOG_ERROR
	LogOff   LogLevel = C.DG_LOG_OFF
)

// SetLogLevel sets the process-wide log level (dg_set_log_level).
func SetLogLevel(level LogLevel) error {
	return check(C.dgw_set_log_level(C.int32_t(level)))
}

// GetLogLevel returns the process-wide log level (dg_get_log_level).
func GetLogLevel() LogLevel {
	return LogLevel(C.dg_get_log_level())
}

var (
	logInstall  sync.Mutex // serialises SetLogCallback so the variable and libdg's registration agree
	logMu       sync.RWMutex
	logCallback func(LogLevel, string)
)

// SetLogCallback sends libdg's log messages (those at or above GetLogLevel) to callback instead
// of stderr (dg_set_log_callback); nil restores the stderr default. The callback may be called
// from any thread, concurrently; a panic inside it is recovered and the message dropped.
func SetLogCallback(callback func(level LogLevel, message string)) error {
	logInstall.Lock()
	defer logInstall.Unlock()
	if callback != nil {
		logMu.Lock()
		logCallback = callback
		logMu.Unlock()
		if err := check(C.dgw_set_log_callback(C.dgw_go_log_callback(), 0)); err != nil {
			logMu.Lock()
			logCallback = nil
			logMu.Unlock()
			return err
		}
		return nil
	}
	err := check(C.dgw_set_log_callback(nil, 0))
	logMu.Lock()
	logCallback = nil
	logMu.Unlock()
	return err
}

func deliverLog(level LogLevel, message string) {
	logMu.RLock()
	callback := logCallback
	logMu.RUnlock()
	if callback == nil {
		return
	}
	defer func() { _ = recover() }() // a panic must not unwind into libdg
	callback(level, message)
}
