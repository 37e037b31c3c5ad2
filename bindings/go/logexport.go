package dg

// Only declarations may precede an //export in a file's preamble, so the callback lives here.

// #include <dg.h>
import "C"

import "unsafe"

//export dgGoLogCallback
func dgGoLogCallback(level C.int32_t, message *C.char, _ unsafe.Pointer) {
	deliverLog(LogLevel(level), C.GoString(message))
}
