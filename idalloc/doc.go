// Package idalloc is the shared, persistent function-id allocator used by the
// matrix `go build -toolexec` compiler wrapper.
//
// Many compile processes run in parallel, each instrumenting one package; each
// asks a [Map] for the ids of that package's functions with [Map.Allocate].
// Ids are stable (the same package path and function name get the same id
// forever), are never reused, and are allocated in increasing order.
//
// # Id space
//
// The id space is Tencent Matrix's: ids 1..[MaxID] (1048573) are functions,
// [Dispatch] (0xFFFFE) is the reserved DISPATCH pseudo-function and
// 0xFFFFF and above are invalid. An allocation that would go past MaxID fails
// with an error wrapping [ErrExhausted] before anything is written.
//
// # Mapping file
//
// The mapping file is plain text:
//
//	# matrix method mapping v1 id=3f0c1c3e-8a51-4a7e-9d0b-6f1e2a4b5c6d
//	# module example.com/app
//	# <id> <kind> <pkgpath> <func> <file:line>
//	1 func example.com/app main /src/app/main.go:12
//	2 method example.com/app (*Server).Handle /src/app/server.go:40
//	3 closure example.com/app main.func1 /src/app/main.go:15
//	4 init example.com/app init.0 /src/app/main.go:8
//
// Line 1 is the header; its id= field is the map's identity, a random UUID
// chosen when the file is created. Line 2 records the map's [Owner]: "#
// module <module path>" for a map created by a module build, or "#
// workspace <module path>..." (the modules of the go.work, sorted) for one
// created in a workspace. It is a comment line, so older readers accept it;
// maps written before owners were recorded have none (their owner is
// unknown and is never checked), and neither has a map created by a build
// outside any module. [OpenWith] can refuse a map whose owner shares no
// module with the build's ([ForeignMapError]). Other lines starting with '#' are comments and empty
// lines are ignored. Every other line is a record of five fields
// separated by single spaces: id, kind ([KindFunc], [KindMethod],
// [KindClosure], [KindInit]), package path, function name and position. The
// position is last and may contain spaces; the other fields may not. Ids are
// strictly increasing through the file and each (package path, function) key
// appears once. A record keeps the position it had when its id was allocated.
//
// # Skipped file
//
// Next to the map, "<map file>.skipped" lists the functions that were not
// instrumented, one per line, as "<pkgpath> <func> <reason> <file:line>"
// (reason is a single token such as no-calls, trivial, inlinable,
// pragma:go:nosplit, blacklist or cgo), and the instrumented functions that
// keep a deferred exit hook, with a reason exit-defer:<why> (see package
// rewrite). It is append-only; an entry is only
// appended if its (pkgpath, func, reason) is not listed yet.
//
// # Concurrency and crash safety
//
// Writers take one exclusive lock per call on "<map file>.lock" (see
// lockedfile), re-read what other processes appended, append all new lines in
// a single write and fsync before releasing the lock. Readers do not lock.
// A [Map] validates the whole file when it is opened and afterwards reads only
// what was appended.
// A writer killed mid-append can leave a partial last line without a trailing
// newline: readers ignore it and the next writer truncates it. Anything else
// that does not parse is reported as a [*CorruptError] naming the file and
// line; the map is never silently reset or rewritten.
//
// The lock relies on flock(2) (LockFileEx on Windows), so the map should live
// on a local file system.
//
// # Read-only and full file systems
//
// Allocating ids that are already in the map, and recording skipped
// functions that are already listed, write nothing and take no lock, so a
// complete map works in a read-only directory. Anything that has to write
// there fails with a [*FileError] that names the file and, for a full or
// read-only file system or a missing permission, says what to do. A failed
// append is undone (the file is truncated back to its last complete line),
// so the map keeps exactly its previous content.
package idalloc
