package stdlib

import (
	"crypto/hkdf"
	"crypto/pbkdf2"
	"hash"
	"reflect"
)

// Packages whose every function is generic over a hash (Go 1.24), which extraction skips:
// each is exported instantiated with hash.Hash, which the constructors cells pass
// (sha256.New, sha512.New, ...) have as their result.
func init() {
	Symbols["crypto/hkdf/hkdf"] = map[string]reflect.Value{
		"Key":     reflect.ValueOf(hkdf.Key[hash.Hash]),
		"Extract": reflect.ValueOf(hkdf.Extract[hash.Hash]),
		"Expand":  reflect.ValueOf(hkdf.Expand[hash.Hash]),
	}
	Symbols["crypto/pbkdf2/pbkdf2"] = map[string]reflect.Value{
		"Key": reflect.ValueOf(pbkdf2.Key[hash.Hash]),
	}
}
