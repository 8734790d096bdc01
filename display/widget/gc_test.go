package widget_test

import (
	"runtime"
	"testing"

	"github.com/gpunotes/gpunotes/display"
	"github.com/gpunotes/gpunotes/display/widget"
)

// makeWidgets makes, and drops, a slider that is only made, one that is shown, a box (not
// shown) with a label in it, and a page-side link from the shown slider to a text box that is
// not shown; it returns their ids.
//
//go:noinline
func makeWidgets() (lone, shown, box, child string, kept []string) {
	l := widget.NewIntSlider(1, 0, 10)
	s := widget.NewIntSlider(2, 0, 10)
	display.Show(s)
	lbl := widget.NewLabel("in a box")
	b := widget.NewVBox(lbl)
	txt := widget.NewIntText(2)
	link := widget.JSLink(s, "value", txt, "value")
	return l.ModelID(), s.ModelID(), b.ModelID(), lbl.ModelID(), []string{txt.ModelID(), link.ModelID()}
}

// TestUnreachableWidgetsClose checks that widgets the program no longer reaches and that were
// never shown get comm_close when collected (a box's children with it), while a shown one
// stays open and in the notebook state, with a link from it and the link's other end.
func TestUnreachableWidgetsClose(t *testing.T) {
	f := bind(t)
	f.closes = make(chan string, 16)
	defer widget.CloseAll()
	lone, shown, box, child, kept := makeWidgets()
	runtime.GC()
	want := map[string]bool{lone: true, box: true, child: true}
	for len(want) > 0 {
		id := <-f.closes // each collected widget's cleanup sends one
		if id == shown || id == kept[0] || id == kept[1] {
			t.Fatalf("%s was closed: the shown slider, or its link or the link's end", id)
		}
		if !want[id] {
			t.Fatalf("comm_close for %s, not one of the dropped widgets", id)
		}
		delete(want, id)
		// the box's cleanup frees the label's last reference: collect again
		runtime.GC()
	}
	st := widget.NotebookState()["state"].(map[string]any)
	for _, id := range append([]string{shown}, kept...) {
		if _, ok := st[id]; !ok {
			t.Errorf("%s (the shown slider, its link or the link's end) left the notebook state", id)
		}
	}
	for _, id := range []string{lone, box, child} {
		if _, ok := st[id]; ok {
			t.Errorf("the collected widget %s is still in the notebook state", id)
		}
	}
}
