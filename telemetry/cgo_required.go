//go:build !cgo

package telemetry

// The SQLite driver (github.com/mattn/go-sqlite3) is C code compiled
// through cgo: without cgo the build fails here first, with an error that
// reads as the fix. Install a C compiler (gcc or clang) and build with
// CGO_ENABLED=1.
var _ = contentpipe_needs_cgo__install_a_C_compiler_and_build_with_CGO_ENABLED_1
