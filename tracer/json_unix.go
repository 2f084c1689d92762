//go:build unix

package tracer

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
)

// oNoFollow makes opening a report file fail on a symbolic link.
const oNoFollow = syscall.O_NOFOLLOW

// oNonblock keeps opening a report file from blocking (on a named pipe
// without a reader); it changes nothing for a regular file.
const oNonblock = syscall.O_NONBLOCK

// checkReportOwner refuses a report file that another user owns: a file
// planted where the program writes its reports.
func checkReportOwner(fi fs.FileInfo) error {
	sys, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return nil
	}
	if euid := os.Geteuid(); int(sys.Uid) != euid {
		return fmt.Errorf("the file is owned by user %d, not by this process' user %d", sys.Uid, euid)
	}
	return nil
}

// openErrorReason explains an error of opening a report file, or "".
func openErrorReason(err error) string {
	switch {
	case errors.Is(err, syscall.ELOOP):
		return "a symbolic link, which is never followed (name the file it points to)"
	case errors.Is(err, syscall.ENOTDIR):
		return "a part of its directory path is not a directory"
	case errors.Is(err, syscall.ENXIO):
		return "a named pipe (FIFO) or device, not a regular file"
	case errors.Is(err, syscall.EISDIR):
		return "a directory, not a regular file"
	}
	return ""
}

// checkReportLinks refuses a report file with more than one hard link: the
// other name could be in a directory another user writes, and the file
// someone else's.
func checkReportLinks(fi fs.FileInfo) error {
	sys, ok := fi.Sys().(*syscall.Stat_t)
	if !ok || sys.Nlink <= 1 {
		return nil
	}
	return fmt.Errorf("the file has %d hard links, and another name of it could be someone else's: reports are written only to a file with one link", sys.Nlink)
}

// maxReportLinks bounds the symbolic links followed in a report file's
// directory path, as the kernel does (ELOOP).
const maxReportLinks = 40

// safeReportPath returns path, an absolute path, with the symbolic links
// of its directories resolved, after checking each: a link another user
// could have planted is refused. Such a link is owned by a user other
// than root and this process' user, or lies in a directory that others
// can write to: sticky (/tmp), world-writable, or group-writable by a
// group other than this process' group. Root's own links in root's
// directories (/var/run → /run) are followed. The last component is not
// resolved: it is opened with O_NOFOLLOW. A directory that does not exist
// ends the walk: the open then says which.
func safeReportPath(path string) (string, error) {
	dir, base := filepath.Split(path)
	rest := strings.Split(dir, "/")
	cur := "/"
	links := 0
	for len(rest) > 0 {
		c := rest[0]
		rest = rest[1:]
		switch c {
		case "", ".":
			continue
		case "..":
			cur = filepath.Dir(cur)
			continue
		}
		next := filepath.Join(cur, c)
		fi, err := os.Lstat(next)
		if err != nil {
			return filepath.Join(append([]string{next}, append(rest, base)...)...), nil
		}
		if fi.Mode()&fs.ModeSymlink == 0 {
			cur = next
			continue
		}
		if links++; links > maxReportLinks {
			return "", fmt.Errorf("tracer: report file %s: more than %d symbolic links in its directory path", path, maxReportLinks)
		}
		if err := checkPlantedLink(cur, fi); err != nil {
			return "", fmt.Errorf("tracer: report file %s is reached through the symbolic link %s, %w; name the file by a path without it", path, next, err)
		}
		target, err := os.Readlink(next)
		if err != nil {
			return "", fmt.Errorf("tracer: report file %s: %w", path, err)
		}
		if filepath.IsAbs(target) {
			cur = "/"
		}
		rest = append(strings.Split(target, "/"), rest...)
	}
	return filepath.Join(cur, base), nil
}

// checkPlantedLink says why the symbolic link fi in directory dir could
// have been planted by another user, or returns nil.
func checkPlantedLink(dir string, fi fs.FileInfo) error {
	if sys, ok := fi.Sys().(*syscall.Stat_t); ok {
		if euid := os.Geteuid(); sys.Uid != 0 && int(sys.Uid) != euid {
			return fmt.Errorf("which user %d owns (not root, not this process' user %d): another user could have planted it", sys.Uid, euid)
		}
	}
	di, err := os.Stat(dir)
	if err != nil {
		return fmt.Errorf("whose directory cannot be checked: %w", err)
	}
	mode := di.Mode()
	var why string
	switch {
	case mode&fs.ModeSticky != 0:
		why = "sticky"
	case mode&0o002 != 0:
		why = "world-writable"
	case mode&0o020 != 0:
		if sys, ok := di.Sys().(*syscall.Stat_t); ok && int(sys.Gid) != os.Getegid() {
			why = fmt.Sprintf("writable by group %d", sys.Gid)
		}
	}
	if why == "" {
		return nil
	}
	return fmt.Errorf("whose directory %s is %s (mode %v): another user could have planted it", dir, why, mode)
}
