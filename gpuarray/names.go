package gpuarray

// This file keeps the spellings that Go's naming rule (initialisms upper-case: FFT, NaN, NPY)
// replaced, for one release, and lists them in Renamed for tools that suggest the new name.

// Renamed maps each old exported name of gpuarray ("Fft", "(*Array).NanSum") to its new
// one ("FFT", "(*Array).NaNSum"). The old names still compile, marked Deprecated, for one
// release; an interpreter's "did you mean" can point from either to the new one.
var Renamed = map[string]string{
	"Fft":                 "FFT",
	"Ifft":                "IFFT",
	"Rfft":                "RFFT",
	"Irfft":               "IRFFT",
	"Hfft":                "HFFT",
	"Ihfft":               "IHFFT",
	"Fftn":                "FFTN",
	"Ifftn":               "IFFTN",
	"Rfftn":               "RFFTN",
	"Irfftn":              "IRFFTN",
	"FftFreq":             "FFTFreq",
	"RfftFreq":            "RFFTFreq",
	"FftShift":            "FFTShift",
	"IfftShift":           "IFFTShift",
	"LoadNpy":             "LoadNPY",
	"SaveNpy":             "SaveNPY",
	"LoadNpz":             "LoadNPZ",
	"NpzNames":            "NPZNames",
	"(*Array).NanSum":     "(*Array).NaNSum",
	"(*Array).NanMean":    "(*Array).NaNMean",
	"(*Array).NanVar":     "(*Array).NaNVar",
	"(*Array).NanStd":     "(*Array).NaNStd",
	"(*Array).NanVarDdof": "(*Array).NaNVarDdof",
	"(*Array).NanStdDdof": "(*Array).NaNStdDdof",
	"(*Array).NanMin":     "(*Array).NaNMin",
	"(*Array).NanMax":     "(*Array).NaNMax",
	"(*Array).NanArgMin":  "(*Array).NaNArgMin",
	"(*Array).NanArgMax":  "(*Array).NaNArgMax",
}

// Fft is FFT.
//
// Deprecated: use FFT.
func Fft(x *Array, opts ...FFTOption) *Array { return FFT(x, opts...) }

// Ifft is IFFT.
//
// Deprecated: use IFFT.
func Ifft(x *Array, opts ...FFTOption) *Array { return IFFT(x, opts...) }

// Rfft is RFFT.
//
// Deprecated: use RFFT.
func Rfft(x *Array, opts ...FFTOption) *Array { return RFFT(x, opts...) }

// Irfft is IRFFT.
//
// Deprecated: use IRFFT.
func Irfft(x *Array, opts ...FFTOption) *Array { return IRFFT(x, opts...) }

// Hfft is HFFT.
//
// Deprecated: use HFFT.
func Hfft(x *Array, opts ...FFTOption) *Array { return HFFT(x, opts...) }

// Ihfft is IHFFT.
//
// Deprecated: use IHFFT.
func Ihfft(x *Array, opts ...FFTOption) *Array { return IHFFT(x, opts...) }

// Fftn is FFTN.
//
// Deprecated: use FFTN.
func Fftn(x *Array, opts ...FFTOption) *Array { return FFTN(x, opts...) }

// Ifftn is IFFTN.
//
// Deprecated: use IFFTN.
func Ifftn(x *Array, opts ...FFTOption) *Array { return IFFTN(x, opts...) }

// Rfftn is RFFTN.
//
// Deprecated: use RFFTN.
func Rfftn(x *Array, opts ...FFTOption) *Array { return RFFTN(x, opts...) }

// Irfftn is IRFFTN.
//
// Deprecated: use IRFFTN.
func Irfftn(x *Array, opts ...FFTOption) *Array { return IRFFTN(x, opts...) }

// FftFreq is FFTFreq.
//
// Deprecated: use FFTFreq.
func FftFreq(n int, d float64, opts ...ArrayOption) *Array { return fftFreq(n, d, opts...) }

// RfftFreq is RFFTFreq.
//
// Deprecated: use RFFTFreq.
func RfftFreq(n int, d float64, opts ...ArrayOption) *Array { return rfftFreq(n, d, opts...) }

// FftShift is FFTShift.
//
// Deprecated: use FFTShift.
func FftShift(x *Array, axes ...int) *Array { return FFTShift(x, axes...) }

// IfftShift is IFFTShift.
//
// Deprecated: use IFFTShift.
func IfftShift(x *Array, axes ...int) *Array { return IFFTShift(x, axes...) }

// LoadNpy is LoadNPY.
//
// Deprecated: use LoadNPY.
func LoadNpy(path string, opts ...ArrayOption) *Array { return LoadNPY(path, opts...) }

// SaveNpy is SaveNPY.
//
// Deprecated: use SaveNPY.
func SaveNpy(path string, x *Array, opts ...ComputeOption) error { return SaveNPY(path, x, opts...) }

// LoadNpz is LoadNPZ.
//
// Deprecated: use LoadNPZ.
func LoadNpz(path, name string, opts ...ArrayOption) *Array { return LoadNPZ(path, name, opts...) }

// NpzNames is NPZNames.
//
// Deprecated: use NPZNames.
func NpzNames(path string) ([]string, error) { return NPZNames(path) }

// NanSum is NaNSum.
//
// Deprecated: use NaNSum.
func (a *Array) NanSum(axes ...int) *Array { return a.NaNSum(axes...) }

// NanMean is NaNMean.
//
// Deprecated: use NaNMean.
func (a *Array) NanMean(axes ...int) *Array { return a.NaNMean(axes...) }

// NanVar is NaNVar.
//
// Deprecated: use NaNVar.
func (a *Array) NanVar(axes ...int) *Array { return a.NaNVar(axes...) }

// NanStd is NaNStd.
//
// Deprecated: use NaNStd.
func (a *Array) NanStd(axes ...int) *Array { return a.NaNStd(axes...) }

// NanMin is NaNMin.
//
// Deprecated: use NaNMin.
func (a *Array) NanMin(axes ...int) *Array { return a.NaNMin(axes...) }

// NanMax is NaNMax.
//
// Deprecated: use NaNMax.
func (a *Array) NanMax(axes ...int) *Array { return a.NaNMax(axes...) }

// NanArgMin is NaNArgMin.
//
// Deprecated: use NaNArgMin.
func (a *Array) NanArgMin(axis ...int) *Array { return a.NaNArgMin(axis...) }

// NanArgMax is NaNArgMax.
//
// Deprecated: use NaNArgMax.
func (a *Array) NanArgMax(axis ...int) *Array { return a.NaNArgMax(axis...) }

// NanVarDdof is NaNVarDdof.
//
// Deprecated: use NaNVarDdof.
func (a *Array) NanVarDdof(ddof float64, axes ...int) *Array { return a.NaNVarDdof(ddof, axes...) }

// NanStdDdof is NaNStdDdof.
//
// Deprecated: use NaNStdDdof.
func (a *Array) NanStdDdof(ddof float64, axes ...int) *Array { return a.NaNStdDdof(ddof, axes...) }
