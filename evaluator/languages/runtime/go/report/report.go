// Package report sends each test's outcome to the evaluator over a private pipe.
//
// The runner gives the program a pipe at the descriptor named by EVALUATOR_REPORT_FD
// and a per-run nonce in EVALUATOR_NONCE. Every record is one line, "<nonce> <json>".
// The program's own stdout is never parsed, so output the program prints cannot pass
// for a test result. Both variables are removed from the environment before any of the
// program's code runs (this package is initialised before the program's package).
package report

import (
	"fmt"
	"io"
	"os"
	"reflect"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"
	"sync"
	"testing"
	"unicode/utf8"
)

const valueCap = 300

var (
	mu    sync.Mutex
	out   *os.File
	nonce string
	count int
)

// nonceFD is where the launcher script hands over the nonce, so that it never sits in
// the program's environment (readable in /proc/self/environ).
const nonceFD = 4

func init() {
	fd, err := strconv.Atoi(os.Getenv("EVALUATOR_REPORT_FD"))
	nonce = os.Getenv("EVALUATOR_NONCE")
	os.Unsetenv("EVALUATOR_REPORT_FD")
	os.Unsetenv("EVALUATOR_NONCE")
	// Only under the runner: it closes every descriptor above 3, so fd 4 can only be
	// the launcher's; elsewhere fd 4 may be anything, even a pipe that never ends.
	if handoff := os.NewFile(nonceFD, "evaluator-nonce"); err == nil && handoff != nil {
		if data, readErr := io.ReadAll(handoff); readErr == nil && len(data) > 0 {
			nonce = strings.TrimSpace(string(data))
			handoff.Close()
		}
	}
	if err == nil && fd > 2 {
		out = os.NewFile(uintptr(fd), "evaluator-report")
	}
}

// quote writes s as a JSON string. It is written here rather than taken from
// encoding/json, which would make every test binary larger and slower to link.
func quote(b *strings.Builder, s string) {
	b.WriteByte('"')
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			b.WriteString(`\ufffd`)
		case r == '"':
			b.WriteString(`\"`)
		case r == '\\':
			b.WriteString(`\\`)
		case r == '\n':
			b.WriteString(`\n`)
		case r == '\t':
			b.WriteString(`\t`)
		case r == '\r':
			b.WriteString(`\r`)
		case r < 0x20 || r == 0x2028 || r == 0x2029:
			fmt.Fprintf(b, `\u%04x`, r)
		default:
			b.WriteString(s[i : i+size])
		}
		i += size
	}
	b.WriteByte('"')
}

// field is one key of a record; values are strings, ints or bools.
type field struct {
	key   string
	value interface{}
}

func emit(fields ...field) {
	var b strings.Builder
	b.WriteString(nonce)
	b.WriteString(" {")
	first := true
	for _, f := range fields {
		if f.value == nil {
			continue
		}
		if !first {
			b.WriteByte(',')
		}
		first = false
		quote(&b, f.key)
		b.WriteByte(':')
		switch v := f.value.(type) {
		case string:
			quote(&b, v)
		case int:
			b.WriteString(strconv.Itoa(v))
		case bool:
			b.WriteString(strconv.FormatBool(v))
		default:
			quote(&b, fmt.Sprint(v))
		}
	}
	b.WriteString("}\n")
	mu.Lock()
	defer mu.Unlock()
	if out != nil {
		// One write per record: a record is never interleaved with another.
		out.Write([]byte(b.String()))
	}
}

// Cap shortens a value's text the way the other languages' harnesses do.
func Cap(s string) string {
	if len(s) <= valueCap {
		return s
	}
	cut := valueCap
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + fmt.Sprintf("… [%d more]", len(s)-cut)
}

// Show formats a value as Go syntax, as testify does in its failure messages.
func Show(v interface{}) string {
	defer func() { recover() }()
	return Cap(fmt.Sprintf("%#v", v))
}

func next() int {
	mu.Lock()
	defer mu.Unlock()
	index := count
	count++
	return index
}

// Test records one assertion. line is the line in the program file.
func Test(line int, status, expected, actual, errorType, message string) {
	rec := []field{{"kind", "test"}, {"index", next()}, {"status", status}, {"line", line}}
	if expected != "" {
		rec = append(rec, field{"expected", expected})
	}
	if actual != "" {
		rec = append(rec, field{"actual", actual})
	}
	if errorType != "" {
		rec = append(rec, field{"error_type", errorType})
	}
	if message != "" {
		rec = append(rec, field{"message", Cap(message)})
	}
	emit(rec...)
}

// CallerLine is the line of the code that called the function calling CallerLine.
func CallerLine() int {
	_, _, line, ok := runtime.Caller(2)
	if !ok {
		return 0
	}
	return line
}

func describePanic(r interface{}) (string, string) {
	if err, ok := r.(runtime.Error); ok {
		return "runtime error", err.Error()
	}
	if err, ok := r.(error); ok {
		return "panic", err.Error()
	}
	return "panic", fmt.Sprint(r)
}

// Guard is deferred around one assertion statement: a panic while evaluating it (in
// the code under test, typically) becomes that assertion's error, and the statements
// after it still run.
func Guard(line int) func() {
	return func() {
		if r := recover(); r != nil {
			errorType, message := describePanic(r)
			Test(line, "error", "", "", errorType, message)
		}
	}
}

// Recover is deferred around a whole test function: a panic outside any guarded
// assertion is reported as the program's exception.
func Recover(where string) func() {
	return func() {
		if r := recover(); r != nil {
			errorType, message := describePanic(r)
			emit(field{"kind", "exception"}, field{"where", where},
				field{"error_type", errorType}, field{"message", Cap(message)},
				field{"traceback", string(debug.Stack())})
		}
	}
}

// Done says that every test ran to the end; without it the run is judged incomplete.
func Done() {
	mu.Lock()
	tests := count
	mu.Unlock()
	emit(field{"kind", "done"}, field{"tests", tests})
}

// RunTests runs `go test`-style test functions through the testing package, each
// guarded, and reports Done after the last.
func RunTests(tests []testing.InternalTest) {
	wrapped := make([]testing.InternalTest, 0, len(tests)+1)
	for _, test := range tests {
		test := test
		wrapped = append(wrapped, testing.InternalTest{Name: test.Name, F: func(t *testing.T) {
			defer Recover(test.Name)()
			test.F(t)
		}})
	}
	wrapped = append(wrapped, testing.InternalTest{Name: "EvaluatorDone", F: func(*testing.T) {
		Done()
	}})
	matchAll := func(pattern, name string) (bool, error) { return true, nil }
	testing.Main(matchAll, wrapped, nil, nil)
}

// RunMain runs a program whose tests are its main function (HumanEval-XL).
func RunMain(body func()) {
	func() {
		defer Recover("main")()
		body()
	}()
	Done()
}

// Compare wraps HumanEval-XL's `deepCompare(actual, expected, msg)`, which panics on
// a mismatch: its panic is this assertion failing, not the program crashing.
func Compare(compare func(interface{}, interface{}, string) bool, actual, expected interface{},
	msg string) {
	line := CallerLine()
	passed := false
	func() {
		defer func() { recover() }()
		passed = compare(actual, expected, msg)
	}()
	if !passed {
		Test(line, "failed", Show(expected), Show(actual), "AssertionError", msg)
	} else {
		Test(line, "passed", Show(expected), Show(actual), "", "")
	}
}

// Panicked stands in for a table row's value whose computation panicked.
type Panicked struct{ Message string }

func (p Panicked) String() string { return "panic: " + p.Message }

// Try computes one value of a MultiPL-E test table. The table is built before any
// subtest runs, so one panicking call would otherwise end every test; the panic
// becomes the value, and that row's subtest reports it.
func Try(compute func() interface{}) (value interface{}) {
	defer func() {
		if r := recover(); r != nil {
			errorType, message := describePanic(r)
			value = Panicked{Message: errorType + ": " + message}
		}
	}()
	return compute()
}

// Run wraps MultiPL-E's `t.Run(name, func(t *testing.T) {...})` inside its table loop:
// the subtest's verdict is reported, with the table row's expected and actual values.
func Run(t *testing.T, row interface{}, name string, body func(t *testing.T)) bool {
	line := CallerLine()
	var failure string
	passed := t.Run(name, func(t *testing.T) {
		defer func() {
			if r := recover(); r != nil {
				errorType, message := describePanic(r)
				failure = errorType + ": " + message
				t.Fail()
			}
		}()
		body(t)
	})
	expected, actual := rowValues(row)
	if panicked := rowPanic(row); panicked != "" {
		Test(line, "error", expected, "", "panic", panicked)
		return passed
	}
	switch {
	case passed:
		Test(line, "passed", expected, actual, "", "")
	case failure != "":
		Test(line, "error", expected, actual, "panic", failure)
	default:
		Test(line, "failed", expected, actual, "AssertionError", name)
	}
	return passed
}

// rowValues reads the `expected` and `actual` fields of a table row, printed with %v
// as MultiPL-E's comparison does.
func rowValues(row interface{}) (string, string) {
	defer func() { recover() }()
	value := reflect.ValueOf(row)
	if value.Kind() != reflect.Struct {
		return "", ""
	}
	get := func(name string) string {
		f := value.FieldByName(name)
		if !f.IsValid() {
			return ""
		}
		return Cap(fmt.Sprintf("%v", f))
	}
	return get("expected"), get("actual")
}

// rowPanic is the message of a row whose `actual` value panicked (see Try), else "".
func rowPanic(row interface{}) (message string) {
	defer func() { recover() }()
	value := reflect.ValueOf(row)
	if value.Kind() != reflect.Struct {
		return ""
	}
	actual := value.FieldByName("actual")
	if actual.Kind() == reflect.Interface && !actual.IsNil() &&
		actual.Elem().Type() == reflect.TypeOf(Panicked{}) {
		return actual.Elem().FieldByName("Message").String()
	}
	return ""
}
