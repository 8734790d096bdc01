package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"math"
	"testing"
)

func TestBenchIterateJSON(t *testing.T) {
	var out bytes.Buffer
	if err := benchIterate(context.Background(), []string{"--n", "400", "--chunk", "100", "--passes", "2", "--json"}, &out); err != nil {
		t.Fatal(err)
	}
	var r iterateResult
	if err := json.Unmarshal(out.Bytes(), &r); err != nil {
		t.Fatalf("%v: %s", err, out.String())
	}
	// The mean absolute value of standardized normal data is sqrt(2/pi).
	if want := math.Sqrt(2/math.Pi) * 400 * 400; r.N != 400 || r.Passes != 2 || math.Abs(r.Value-want) > 0.01*want || r.Seconds <= 0 {
		t.Fatalf("result %+v (value want about %.0f)", r, want)
	}
	if err := benchIterate(context.Background(), []string{"--passes", "0"}, &out); !errors.Is(err, errUsage) {
		t.Fatalf("--passes 0: %v", err)
	}
}
