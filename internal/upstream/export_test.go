package upstream

// KillProcess kills p's process group, as Close does once its grace is
// over: the tests' way to make an upstream die mid-call.
func KillProcess(p *Process) { killGroup(p.cmd) }
