package gpuarray

import "github.com/gpunotes/gpunotes/gpuarray/plan"

// byKernel groups tasks by kernel, the kernels in the order their first task comes, as
// gpuSched.Run groups a stage's tasks; the test schedulers look at a group as the GPU would.
func byKernel(tasks []*plan.Task) ([]*plan.Kernel, map[*plan.Kernel][]*plan.Task) {
	var kernels []*plan.Kernel
	groups := map[*plan.Kernel][]*plan.Task{}
	for _, t := range tasks {
		if _, ok := groups[t.Kernel]; !ok {
			kernels = append(kernels, t.Kernel)
		}
		groups[t.Kernel] = append(groups[t.Kernel], t)
	}
	return kernels, groups
}
