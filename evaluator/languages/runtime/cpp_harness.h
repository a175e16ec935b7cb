// The evaluator's C++ test harness: every rewritten assert reports on its own.
//
// This header is compiled into the precompiled prelude, after the headers the dataset's
// programs include anyway, and before the program. Its own includes are all among
// those (CodeGeeX's helper headers, or <bits/stdc++.h> for MultiPL-E), so for those
// datasets it makes no new standard-library name visible to the program: a program
// that forgets an #include fails to compile here exactly as in the reference harness.
//
// The code that is the same for every program (the report channel, JSON, the site's
// reporting) is compiled once, with EVALUATOR_HARNESS_IMPLEMENTATION defined, into an
// object that every program links; the templates that show values stay here.
//
// Records go to the runner's private report pipe as `<nonce> <json>` lines. The nonce
// reaches us on fd 4 (the launcher moved it out of the environment), so the program
// cannot read it from getenv() or /proc/self/environ.

#ifndef EVALUATOR_CPP_HARNESS_H
#define EVALUATOR_CPP_HARNESS_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <string>
#include <iostream>

namespace evaluator_harness {

extern int test_count;
const size_t value_cap = 300;

void json_string(std::string& out, const std::string& text);
void emit(const std::string& json);
void put_quoted(std::string& out, const char* s, size_t n, char quote);

// ---- showing values -------------------------------------------------------------

struct rank0 {};
struct rank1 : rank0 {};
struct rank2 : rank1 {};
struct rank3 : rank2 {};
struct rank4 : rank3 {};
struct rank5 : rank4 {};

class string_buffer : public std::streambuf {
public:
    std::string text;
protected:
    int_type overflow(int_type c) {
        if (c != traits_type::eof()) text += static_cast<char>(c);
        return c;
    }
    std::streamsize xsputn(const char* s, std::streamsize n) {
        text.append(s, static_cast<size_t>(n));
        return n;
    }
};

template <class T> void put(std::string& out, const T& value);

// Every overload is a template taking `const T&`, so no implicit conversion can make two
// of them equally good: the rank tag alone decides, and an overload that does not apply
// removes itself through enable_if.
template <class T, class U> struct is : std::is_same<T, U> {};

template <class T>
typename std::enable_if<is<T, bool>::value>::type
put_value(std::string& out, const T& v, rank5) { out += v ? "true" : "false"; }

template <class T>
typename std::enable_if<is<T, char>::value>::type
put_value(std::string& out, const T& v, rank5) { put_quoted(out, &v, 1, '\''); }

template <class T>
typename std::enable_if<is<typename std::decay<T>::type, char*>::value ||
                        is<typename std::decay<T>::type, const char*>::value>::type
put_value(std::string& out, const T& v, rank5) {
    const char* s = v;
    if (s == 0) out += "nullptr";
    else put_quoted(out, s, strlen(s), '"');
}

template <class T>
typename std::enable_if<is<T, std::string>::value>::type
put_value(std::string& out, const T& v, rank5) { put_quoted(out, v.data(), v.size(), '"'); }

template <class T>
typename std::enable_if<is<T, std::nullptr_t>::value>::type
put_value(std::string& out, const T&, rank5) { out += "nullptr"; }

template <class T>
typename std::enable_if<std::is_floating_point<T>::value>::type
put_value(std::string& out, const T& v, rank5) {
    // The shortest text that reads back as the same value: 0.1f shows as 0.1.
    char buffer[64];
    for (int precision = 1; precision <= 21; ++precision) {
        snprintf(buffer, sizeof buffer, "%.*Lg", precision, static_cast<long double>(v));
        if (v != v || static_cast<T>(strtold(buffer, 0)) == v) break;
    }
    out += buffer;
}

template <class T>
typename std::enable_if<std::is_integral<T>::value || std::is_enum<T>::value>::type
put_value(std::string& out, const T& v, rank4) {
    if (std::is_unsigned<T>::value) out += std::to_string(static_cast<unsigned long long>(v));
    else out += std::to_string(static_cast<long long>(v));
}

template <class A, class B>
void put_value(std::string& out, const std::pair<A, B>& v, rank4) {
    out += '{';
    put(out, v.first);
    out += ", ";
    put(out, v.second);
    out += '}';
}

template <class T, size_t N>
typename std::enable_if<!is<T, char>::value>::type
put_value(std::string& out, const T (&v)[N], rank3) {
    out += '{';
    for (size_t i = 0; i < N; ++i) {
        if (i) out += ", ";
        if (out.size() >= value_cap) { out += "..."; break; }
        put(out, v[i]);
    }
    out += '}';
}

template <class T>
auto put_value(std::string& out, const T& v, rank3) ->
    typename std::enable_if<std::is_same<typename T::value_type, char>::value,
                            decltype(v.data(), v.size(), void())>::type {
    put_quoted(out, v.data(), v.size(), '"');
}

template <class T>
auto put_value(std::string& out, const T& v, rank2) -> decltype(v.begin(), v.end(), void()) {
    out += '{';
    bool first = true;
    for (auto it = v.begin(); it != v.end(); ++it) {
        if (!first) out += ", ";
        first = false;
        if (out.size() >= value_cap) { out += "..."; break; }
        put(out, *it);
    }
    out += '}';
}

#if defined(_GLIBCXX_TUPLE)
template <size_t I, size_t N> struct tuple_printer {
    template <class Tuple> static void put_items(std::string& out, const Tuple& t) {
        if (I) out += ", ";
        put(out, std::get<I>(t));
        tuple_printer<I + 1, N>::put_items(out, t);
    }
};
template <size_t N> struct tuple_printer<N, N> {
    template <class Tuple> static void put_items(std::string&, const Tuple&) {}
};
template <class... T>
void put_value(std::string& out, const std::tuple<T...>& v, rank4) {
    out += '{';
    tuple_printer<0, sizeof...(T)>::put_items(out, v);
    out += '}';
}
#endif

#if __cplusplus >= 201703L && defined(_GLIBCXX_OPTIONAL)
template <class T>
typename std::enable_if<is<T, std::nullopt_t>::value>::type
put_value(std::string& out, const T&, rank5) { out += "std::nullopt"; }
template <class T>
void put_value(std::string& out, const std::optional<T>& v, rank4) {
    if (!v.has_value()) { out += "std::nullopt"; return; }
    put(out, *v);
}
#endif

template <class T>
auto put_value(std::string& out, const T& v, rank1) ->
    decltype(std::declval<std::ostream&>() << v, void()) {
    string_buffer buffer;
    std::ostream stream(&buffer);
    stream << std::boolalpha << v;
    out += buffer.text;
}

template <class T>
void put_value(std::string& out, const T&, rank0) { out += "<value>"; }

template <class T> void put(std::string& out, const T& value) {
    put_value(out, value, rank5());
}

template <class T> std::string show(const T& value) {
    std::string out;
    put(out, value);
    if (out.size() > value_cap) out = out.substr(0, value_cap) + "...";
    return out;
}

// A string literal shows as its `const char*` would (the overload above decays it too).
// The non-template overload is the one a literal (`const char[N]`) picks, whatever its
// length, and it is compiled once, into the harness object; a non-const char array
// still takes the template, as it prefers binding to `const char (&)[N]` over a
// conversion to `const char*`, and shows the same way.
std::string show(const char* value);
template <size_t N> std::string show(const char (&value)[N]) {
    return show<const char*>(value);
}

// ---- sites ----------------------------------------------------------------------

// One execution of one rewritten assert. `site` names the assert in the test text; the
// host maps it back to its source and line.
class Site {
public:
    // Out of line: every rewritten assert constructs and destroys one, and code
    // emitted once in the harness object is code no program compiles again.
    explicit Site(int site);
    ~Site();

    // The first call of the function under test inside the assert: its value is the
    // "actual" shown for a truth assertion.
    template <class T> T&& tap(T&& value) {
        if (!tapped_) {
            tapped_ = true;
            actual_ = show(value);
        }
        return static_cast<T&&>(value);
    }

    void truth(bool ok);

    // `assert(a == b)`: the rewritten test shows both sides itself (`show`), so this
    // is one function in the harness object, not a template instantiated for every
    // pair of types (and every length of a string literal) a test compares.
    void compare(bool ok, const std::string& actual, const std::string& expected);

    // Called inside a catch block: reports what was thrown as this assert's error.
    void raised();

private:
    void finish(const char* status, const std::string* actual, const std::string* expected,
                const std::string* error_type, const std::string* message);

    int site_;
    int index_;
    bool tapped_;
    std::string actual_;
};

template <class F> void check_expression(int site, F body) {
    Site current(site);
    try {
        current.truth(body(current));
    } catch (...) {
        current.raised();
    }
}

// Lives in main's body: its destructor runs only when main returns normally, which is
// what the `done` record certifies (exit(), abort() and crashes skip it).
struct MainGuard {
    ~MainGuard();
};

}  // namespace evaluator_harness

#ifdef EVALUATOR_HARNESS_IMPLEMENTATION
namespace evaluator_harness {

static FILE* report_stream = 0;
static char report_nonce[96] = {0};
int test_count = 0;

static void open_channel() {
    const char* nonce = getenv("EVALUATOR_NONCE");
    if (nonce != 0 && strlen(nonce) < sizeof report_nonce) {
        strcpy(report_nonce, nonce);
        // Overwrite in place as well, so /proc/self/environ no longer shows it.
        memset(const_cast<char*>(nonce), 'x', strlen(nonce));
        unsetenv("EVALUATOR_NONCE");
    } else {
        FILE* from_launcher = fdopen(4, "r");
        if (from_launcher != 0) {
            if (fgets(report_nonce, sizeof report_nonce, from_launcher) == 0) {
                report_nonce[0] = 0;
            }
            fclose(from_launcher);
            report_nonce[strcspn(report_nonce, "\r\n")] = 0;
        }
    }
    const char* fd_text = getenv("EVALUATOR_REPORT_FD");
    if (fd_text != 0 && report_nonce[0] != 0) {
        report_stream = fdopen(atoi(fd_text), "w");
    }
}

// Priority 101 runs before every ordinary static initializer, so before program code.
__attribute__((constructor(101))) static void evaluator_harness_start() { open_channel(); }

void json_string(std::string& out, const std::string& text) {
    // Invalid UTF-8 must not reach the runner, whose JSON reader would reject the line.
    static const char hex[] = "0123456789abcdef";
    out += '"';
    size_t i = 0;
    while (i < text.size()) {
        unsigned char c = static_cast<unsigned char>(text[i]);
        if (c == '"' || c == '\\') {
            out += '\\';
            out += static_cast<char>(c);
            ++i;
        } else if (c < 0x20 || c == 0x7f) {
            out += "\\u00";
            out += hex[c >> 4];
            out += hex[c & 15];
            ++i;
        } else if (c < 0x80) {
            out += static_cast<char>(c);
            ++i;
        } else {
            size_t length = c >= 0xf0 && c <= 0xf4 ? 4 : c >= 0xe0 ? 3 : c >= 0xc2 ? 2 : 0;
            bool valid = length != 0 && i + length <= text.size() && c < 0xf8;
            for (size_t k = 1; valid && k < length; ++k) {
                valid = (static_cast<unsigned char>(text[i + k]) & 0xc0) == 0x80;
            }
            if (valid) {
                out.append(text, i, length);
                i += length;
            } else {
                out += "\\ufffd";
                ++i;
            }
        }
    }
    out += '"';
}

void emit(const std::string& json) {
    if (report_stream == 0) {
        fprintf(stderr, "[evaluator] %s\n", json.c_str());
        return;
    }
    std::string line(report_nonce);
    line += ' ';
    line += json;
    line += '\n';
    fwrite(line.data(), 1, line.size(), report_stream);
    fflush(report_stream);
}

void put_quoted(std::string& out, const char* s, size_t n, char quote) {
    out += quote;
    for (size_t i = 0; i < n && out.size() < value_cap; ++i) {
        char c = s[i];
        if (c == '\n') out += "\\n";
        else if (c == '\t') out += "\\t";
        else if (c == '\0') out += "\\0";
        else if (c == quote || c == '\\') { out += '\\'; out += c; }
        else out += c;
    }
    out += quote;
}

Site::Site(int site) : site_(site), index_(test_count++), tapped_(false) {}

Site::~Site() {}

std::string show(const char* value) { return show<const char*>(value); }

void Site::compare(bool ok, const std::string& actual, const std::string& expected) {
    finish(ok ? "passed" : "failed", &actual, &expected, 0, 0);
}

void Site::truth(bool ok) {
    finish(ok ? "passed" : "failed", tapped_ ? &actual_ : 0, 0, 0, 0);
}

void Site::raised() {
    // Rethrow the exception being handled, to learn what it is.
    std::string type = "exception", message;
    try {
        throw;
    } catch (const std::exception& error) {
        type = "std::exception";
        message = error.what();
    } catch (const std::string& error) {
        type = "std::string";
        message = error;
    } catch (const char* error) {
        type = "const char*";
        message = error ? error : "";
    } catch (int error) {
        type = "int";
        message = std::to_string(error);
    } catch (...) {
        message = "an exception of an unknown type";
    }
    finish("error", tapped_ ? &actual_ : 0, 0, &type, &message);
}

void Site::finish(const char* status, const std::string* actual, const std::string* expected,
                  const std::string* error_type, const std::string* message) {
    std::string json = "{\"kind\":\"test\",\"index\":" + std::to_string(index_) +
                       ",\"site\":" + std::to_string(site_) + ",\"status\":\"" + status + "\"";
    if (actual) { json += ",\"actual\":"; json_string(json, *actual); }
    if (expected) { json += ",\"expected\":"; json_string(json, *expected); }
    if (error_type) { json += ",\"error_type\":"; json_string(json, *error_type); }
    if (message) { json += ",\"message\":"; json_string(json, *message); }
    json += "}";
    emit(json);
}

MainGuard::~MainGuard() {
    fflush(stdout);
    emit("{\"kind\":\"done\",\"tests\":" + std::to_string(test_count) + "}");
}

}  // namespace evaluator_harness
#endif  // EVALUATOR_HARNESS_IMPLEMENTATION

#endif  // EVALUATOR_CPP_HARNESS_H
