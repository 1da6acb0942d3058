package goplugin

import (
	"fmt"
	"os"
	"os/exec"
	"strings"
)

// zombie reports whether the plugin process started by cmd has exited and
// is not yet reaped (go-plugin reaps it once it has read the process's
// output to its end): its pid, the id of its group, is still its own.
func zombie(cmd *exec.Cmd) bool {
	if cmd.Process == nil {
		return false
	}
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", cmd.Process.Pid))
	if err != nil {
		return false
	}
	// The state follows the command name, which is in parentheses and may
	// itself hold some.
	fields := strings.Fields(string(b[strings.LastIndexByte(string(b), ')')+1:]))
	return len(fields) > 0 && fields[0] == "Z"
}
