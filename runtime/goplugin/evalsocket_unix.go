//go:build unix

package goplugin

import (
	"os"
	"os/exec"
	"strconv"
	"syscall"

	"github.com/drover-sched/drover/sdk/plugin/grpcwire"
)

// offerEvalSocket makes the eval socket's pair and hands cmd's process its
// end, named by grpcwire.EvalSocketEnv. It returns the host's end and the
// plugin's, which the caller closes once the process started.
func offerEvalSocket(cmd *exec.Cmd) (*grpcwire.EvalSocket, *os.File, error) {
	syscall.ForkLock.RLock()
	fds, err := syscall.Socketpair(syscall.AF_UNIX, syscall.SOCK_STREAM, 0)
	if err == nil {
		syscall.CloseOnExec(fds[0])
		syscall.CloseOnExec(fds[1])
	}
	syscall.ForkLock.RUnlock()
	if err != nil {
		return nil, nil, err
	}
	theirs := os.NewFile(uintptr(fds[1]), "eval socket (plugin)")
	ours, err := grpcwire.NewEvalSocket(os.NewFile(uintptr(fds[0]), "eval socket"))
	if err != nil {
		theirs.Close()
		return nil, nil, err
	}
	// The child's descriptors 0 to 2 are its standard streams; ExtraFiles
	// follow from 3.
	fd := 3 + len(cmd.ExtraFiles)
	cmd.ExtraFiles = append(cmd.ExtraFiles, theirs)
	cmd.Env = append(cmd.Env, grpcwire.EvalSocketEnv+"="+strconv.Itoa(fd))
	return ours, theirs, nil
}
