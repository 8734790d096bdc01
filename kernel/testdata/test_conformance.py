"""jupyter_kernel_test conformance for the installed "gpunotes" kernelspec (Go cells)."""
import unittest

import jupyter_kernel_test as jkt


class GpunotesKernelTests(jkt.KernelTests):
    kernel_name = "gpunotes"
    language_name = "go"
    file_extension = ".go"

    code_hello_world = 'import "fmt"\nfmt.Println("hello, world")'
    code_stderr = 'import ("fmt"; "os")\nfmt.Fprintln(os.Stderr, "oops")'

    completion_samples = [
        {"text": "fmt.Prin", "matches": {"Print", "Printf", "Println"}},
        {"text": "strings.ToUpperS", "matches": {"ToUpperSpecial"}},
    ]
    complete_code_samples = ["1 + 1", "x := 3", 'import "fmt"\nfmt.Println(1)', "func f() int { return 1 }"]
    incomplete_code_samples = ["for i := 0; i < 3; i++ {", "x := (1 +", "func f() {"]
    invalid_code_samples = ["x := )", "}"]

    code_generate_error = 'panic("boom")'
    code_execute_result = [
        {"code": "6 * 7", "result": "42"},
        {"code": 'import "strings"\nstrings.Repeat("ab", 2)', "result": '"abab"'},
    ]
    code_display_data = [
        {"code": 'display.HTML("<b>hi</b>")', "mime": "text/html"},
        {"code": 'display.Markdown("# title")', "mime": "text/markdown"},
        {"code": 'display.SVG("<svg xmlns=\\"http://www.w3.org/2000/svg\\"></svg>")', "mime": "image/svg+xml"},
    ]
    code_history_pattern = "6 * *"
    supported_history_operations = ("tail", "range", "search")
    code_inspect_sample = "strings.ToUpper"
    code_clear_output = "display.Clear(false)"
    code_page_something = "strings.ToUpper?"


if __name__ == "__main__":
    unittest.main(verbosity=2)
