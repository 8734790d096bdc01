package preload_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"fmt"
	"image/png"
	"math"
	"strings"
	"testing"

	"github.com/google/uuid"
	"gonum.org/v1/gonum/mat"
	"gonum.org/v1/gonum/stat"
	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"

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

// shownOut records a cell's displays as well as its text.
type shownOut struct {
	textOut
	shown []display.Data
}

func (o *shownOut) Display(d display.Data, _ bool) { o.shown = append(o.shown, d) }

// TestPlotInCell draws a gonum plot in a cell, shows its PNG with display.PNG, and compares
// the image with the same plot drawn compiled here (plot's rasterizer is deterministic).
func TestPlotInCell(t *testing.T) {
	s, err := interp.New(interp.Options{Symbols: preload.Symbols, Preload: preload.Packages})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	cell := `import (
	"bytes"
	"math"
	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
)
p := plot.New()
p.Title.Text = "sin"
p.X.Label.Text = "x"
pts := make(plotter.XYs, 50)
for i := range pts {
	pts[i].X = float64(i) / 8
	pts[i].Y = math.Sin(pts[i].X)
}
line, err := plotter.NewLine(pts)
if err != nil {
	panic(err)
}
p.Add(line, plotter.NewGrid())
w, err := p.WriterTo(4*vg.Inch, 3*vg.Inch, "png")
if err != nil {
	panic(err)
}
var buf bytes.Buffer
w.WriteTo(&buf)
display.PNG(buf.Bytes())`
	out := &shownOut{}
	if _, err := s.Execute(context.Background(), cell, out); err != nil {
		t.Fatal(err)
	}
	p := plot.New()
	p.Title.Text = "sin"
	p.X.Label.Text = "x"
	pts := make(plotter.XYs, 50)
	for i := range pts {
		pts[i].X = float64(i) / 8
		pts[i].Y = math.Sin(pts[i].X)
	}
	line, err := plotter.NewLine(pts)
	if err != nil {
		t.Fatal(err)
	}
	p.Add(line, plotter.NewGrid())
	w, err := p.WriterTo(4*vg.Inch, 3*vg.Inch, "png")
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if _, err := w.WriteTo(&buf); err != nil {
		t.Fatal(err)
	}
	if len(out.shown) != 1 {
		t.Fatalf("%d displays, want 1 (text %q)", len(out.shown), out.String())
	}
	got, _ := out.shown[0].MIME["image/png"].(string)
	if want := base64.StdEncoding.EncodeToString(buf.Bytes()); got != want {
		t.Fatalf("the cell's PNG (%d base64 bytes) differs from the compiled one (%d)", len(got), len(want))
	}
	if _, err := png.Decode(bytes.NewReader(buf.Bytes())); err != nil {
		t.Fatalf("not a PNG: %v", err)
	}
}
