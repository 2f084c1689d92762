//go:build unix

package tracer

import (
	"fmt"
	"os"
	"syscall"
)

// oNoFollow makes opening a report file fail on a symbolic link.
const oNoFollow = syscall.O_NOFOLLOW

// checkReportOwner refuses a report file that another user owns: a file
// planted where the program writes its reports.
func checkReportOwner(f *os.File) error {
	st, err := f.Stat()
	if err != nil {
		return err
	}
	sys, ok := st.Sys().(*syscall.Stat_t)
	if !ok {
		return nil
	}
	if euid := os.Geteuid(); int(sys.Uid) != euid {
		return fmt.Errorf("the file is owned by user %d, not by this process' user %d", sys.Uid, euid)
	}
	return nil
}
