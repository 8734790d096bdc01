package main

import (
	"crypto/sha3"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
)

// Standard-library names of Go 1.24 and 1.25: crypto/sha3, os.Root, sync.WaitGroup.Go.
func main() {
	sum := sha3.Sum256([]byte("gpunotes"))
	fmt.Println(hex.EncodeToString(sum[:8]))
	h := sha3.New512()
	h.Write([]byte("abc"))
	fmt.Println(h.Size(), hex.EncodeToString(h.Sum(nil)[:4]))
	shake := sha3.SumSHAKE128([]byte("x"), 8)
	fmt.Println(hex.EncodeToString(shake))

	inside, escaped, err := readInRoot()
	fmt.Println(inside, escaped, err)

	var wg sync.WaitGroup
	var mu sync.Mutex
	total := 0
	for i := 1; i <= 4; i++ {
		wg.Go(func() {
			mu.Lock()
			total += i
			mu.Unlock()
		})
	}
	wg.Wait()
	fmt.Println(total)
}

// readInRoot reads a file through an os.Root (Go 1.24) and tries to leave the root.
func readInRoot() (string, bool, error) {
	dir, err := os.MkdirTemp("", "root")
	if err != nil {
		return "", false, err
	}
	defer os.RemoveAll(dir)
	if err := os.WriteFile(filepath.Join(dir, "a.txt"), []byte("inside"), 0o644); err != nil {
		return "", false, err
	}
	root, err := os.OpenRoot(dir)
	if err != nil {
		return "", false, err
	}
	defer root.Close()
	f, err := root.Open("a.txt")
	if err != nil {
		return "", false, err
	}
	defer f.Close()
	b := make([]byte, 6)
	n, _ := f.Read(b)
	_, err = root.Open("../escape")
	return string(b[:n]), err != nil && strings.Contains(err.Error(), "escape"), nil
}
