package preload_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/google/uuid"
	"gonum.org/v1/gonum/mat"
	"gonum.org/v1/gonum/stat"

	"github.com/gpunotes/gpunotes/display"
	"github.com/gpunotes/gpunotes/interp"
	"github.com/gpunotes/gpunotes/interp/preload"
)

type textOut struct{ strings.Builder }

func (o *textOut) Stream(name, text string)           { o.WriteString(text) }
func (o *textOut) Display(display.Data, bool)         {}
func (o *textOut) Clear(bool)                         {}
func (o *textOut) Input(string, bool) (string, error) { return "", fmt.Errorf("no stdin") }

// TestThirdPartyImports imports gonum's mat and stat and google/uuid in cells (compiled-in
// symbol tables) and compares what the cells print with the same calls compiled here.
func TestThirdPartyImports(t *testing.T) {
	s, err := interp.New(interp.Options{Symbols: preload.Symbols, Preload: preload.Packages})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	cell := `import (
	"fmt"
	"github.com/google/uuid"
	"gonum.org/v1/gonum/mat"
	"gonum.org/v1/gonum/stat"
)
a := mat.NewDense(2, 2, []float64{4, 1, 2, 3})
var inv mat.Dense
err := inv.Inverse(a)
fmt.Printf("%v\n%v\n", mat.Formatted(&inv), err)
xs := []float64{1, 2, 3, 4, 10}
fmt.Println(stat.Mean(xs, nil), stat.StdDev(xs, nil))
id := uuid.NewSHA1(uuid.NameSpaceURL, []byte("gpunotes"))
fmt.Println(id, id.Version())`
	out := &textOut{}
	if _, err := s.Execute(context.Background(), cell, out); err != nil {
		t.Fatal(err)
	}
	a := mat.NewDense(2, 2, []float64{4, 1, 2, 3})
	var inv mat.Dense
	ierr := inv.Inverse(a)
	xs := []float64{1, 2, 3, 4, 10}
	id := uuid.NewSHA1(uuid.NameSpaceURL, []byte("gpunotes"))
	want := fmt.Sprintf("%v\n%v\n", mat.Formatted(&inv), ierr) + fmt.Sprintln(stat.Mean(xs, nil), stat.StdDev(xs, nil)) + fmt.Sprintln(id, id.Version())
	if out.String() != want {
		t.Fatalf("cell printed\n%s\ncompiled Go printed\n%s", out.String(), want)
	}
}
