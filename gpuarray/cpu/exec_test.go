package cpu

import (
	"bytes"
	"context"
	"encoding/gob"
	"encoding/json"
	"testing"

	"github.com/gpunotes/gpunotes/gpuarray/expr"
	"github.com/gpunotes/gpunotes/gpuarray/plan"
)

// TestTasksSurviveSerialization ships the seed expression's tasks through JSON and gob, as a
// cluster does, and checks a worker computes the same partials.
func TestTasksSurviveSerialization(t *testing.T) {
	chunks, _ := expr.RegularChunks([]int{300, 300}, []int{128, 128})
	x, _ := expr.NewRandom(expr.RandSpec{Dist: expr.Normal, P0: 10, P1: 1, Key: [2]uint32{42, 0}}, expr.Float64, []int{300, 300}, chunks)
	one, _ := expr.NewConst(1, expr.Float64, nil, nil)
	y, _ := expr.NewBinary(expr.OpAdd, x, one)
	z, err := expr.NewSlice(y, []expr.Index{{Step: 2}, {Step: -2}})
	if err != nil {
		t.Fatal(err)
	}
	s, _ := expr.NewReduce(z, expr.Sum, nil)
	st, err := plan.Lower(0, s, nil, plan.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if len(st.Tasks) != 9 {
		t.Fatalf("%d tasks for a 3x3 chunk grid", len(st.Tasks))
	}
	for _, task := range st.Tasks {
		want, err := Execute(context.Background(), task)
		if err != nil {
			t.Fatal(err)
		}
		js, err := json.Marshal(task)
		if err != nil {
			t.Fatal(err)
		}
		var viaJSON plan.Task
		if err := json.Unmarshal(js, &viaJSON); err != nil {
			t.Fatal(err)
		}
		var buf bytes.Buffer
		if err := gob.NewEncoder(&buf).Encode(task); err != nil {
			t.Fatal(err)
		}
		var viaGob plan.Task
		if err := gob.NewDecoder(&buf).Decode(&viaGob); err != nil {
			t.Fatal(err)
		}
		for _, tk := range []*plan.Task{&viaJSON, &viaGob} {
			got, err := Execute(context.Background(), tk)
			if err != nil {
				t.Fatal(err)
			}
			if got.Data.Float(0) != want.Data.Float(0) {
				t.Fatalf("task %d: %v after shipping, %v before", task.Index, got.Data.Float(0), want.Data.Float(0))
			}
		}
	}
}

func TestBadTasks(t *testing.T) {
	if _, err := Execute(context.Background(), &plan.Task{}); err == nil {
		t.Fatal("a task without kernel must fail")
	}
	k := &plan.Kernel{Shape: []int{4}, Instrs: []plan.Instr{{Code: plan.Binary, Op: expr.OpAdd, Args: []int{0, 1}}}}
	if _, err := Execute(context.Background(), &plan.Task{Kernel: k, Offset: []int{0}, Shape: []int{4}}); err == nil {
		t.Fatal("an instruction using a later one must fail")
	}
}
