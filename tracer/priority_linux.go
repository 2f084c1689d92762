package tracer

import "os"

// processPriority returns the process' scheduling priority and nice value
// as the kernel reports them in /proc/self/stat (fields 18 and 19: for a
// normal process priority is 20 + nice).
func processPriority() (priority, nice int, ok bool) {
	data, err := os.ReadFile("/proc/self/stat")
	if err != nil {
		return 0, 0, false
	}
	return parseProcStat(data)
}
