'use strict';
// The recorder of the rewritten assertions (harness.js says how the tests are rewritten):
// it evaluates an assertion's operands, records passed / failed / error with the
// expected and actual values, and never throws.
//
// Shared by harness.js (a program in a process or a worker thread of its own) and by
// realm.js, which compiles this same file into each program's realm: so it names
// nothing but the language's built-ins and what it is handed (`emit`, `show`, `now`).

const VALUE_CAP = 300;

function cap(text) {
  return text.length <= VALUE_CAP ? text : text.slice(0, VALUE_CAP) + `… [${text.length - VALUE_CAP} more]`;
}

function errorType(err) {
  if (err && typeof err === 'object' && typeof err.name === 'string') return err.name;
  return typeof err === 'string' ? 'thrown string' : 'thrown ' + typeof err;
}

function errorMessage(err) {
  try {
    if (err && typeof err === 'object' && 'message' in err) return cap(String(err.message));
    return cap(String(err));
  } catch (e) {
    return '<unprintable error>';
  }
}

function isAssertionError(err) {
  return !!err && typeof err === 'object' && (err.code === 'ERR_ASSERTION' || err.name === 'AssertionError');
}

function makeRecorder(sites, emit, show, now) {
  let count = 0;
  const ops = {
    '===': (a, b) => a === b,
    '==': (a, b) => a == b, // eslint-disable-line eqeqeq
    '!==': (a, b) => a !== b,
    '!=': (a, b) => a != b, // eslint-disable-line eqeqeq
  };
  const record = (site, fields, started) => {
    const info = sites[site] || { line: null, source: '' };
    emit(Object.assign({
      kind: 'test', index: count++, site, line: info.line, source: info.source,
      duration_ms: Math.round((now() - started) * 1000) / 1000,
    }, fields));
  };
  const failure = (messageThunk, fallback) => {
    if (!messageThunk) return fallback;
    try {
      return cap(messageThunk().map((part) => (typeof part === 'string' ? part : show(part))).join(' '));
    } catch (err) {
      return fallback;
    }
  };
  const errored = (site, err, started) => record(site, {
    status: 'error', error_type: errorType(err), message: errorMessage(err),
  }, started);
  return {
    compare(site, left, right, op, message) {
      const started = now();
      let actual;
      let expected;
      try {
        actual = left();
        expected = right();
      } catch (err) {
        return errored(site, err, started);
      }
      const ok = ops[op](actual, expected);
      const expectedText = (op === '!==' || op === '!=' ? 'not ' : '') + show(expected);
      record(site, ok ? { status: 'passed', expected: expectedText, actual: show(actual) } : {
        status: 'failed', expected: expectedText, actual: show(actual), error_type: 'AssertionError',
        message: failure(message, 'Assertion failed'),
      }, started);
    },
    truthy(site, cond, message) {
      const started = now();
      let value;
      try {
        value = cond();
      } catch (err) {
        return errored(site, err, started);
      }
      record(site, value ? { status: 'passed', actual: show(value) } : {
        status: 'failed', expected: 'a truthy value', actual: show(value), error_type: 'AssertionError',
        message: failure(message, 'Assertion failed'),
      }, started);
    },
    method(site, object, name, args) {
      const started = now();
      let target;
      let values;
      try {
        target = object();
        values = args();
      } catch (err) {
        return errored(site, err, started);
      }
      const oneArg = name === 'ok' || name === 'ifError' || name === 'fail';
      const fields = { expected: oneArg ? undefined : show(values[1]), actual: show(values[0]) };
      try {
        target[name](...values);
      } catch (err) {
        if (!isAssertionError(err)) return errored(site, err, started);
        return record(site, Object.assign(fields, {
          status: 'failed', error_type: 'AssertionError', message: errorMessage(err),
        }), started);
      }
      record(site, Object.assign(fields, { status: 'passed' }), started);
    },
    func(site, callee, args) {
      const started = now();
      let fn;
      let values;
      try {
        fn = callee();
        values = args();
      } catch (err) {
        return errored(site, err, started);
      }
      try {
        fn(...values);
      } catch (err) {
        if (!isAssertionError(err)) return errored(site, err, started);
        return record(site, {
          status: 'failed', actual: show(values[0]), error_type: 'AssertionError', message: errorMessage(err),
        }, started);
      }
      record(site, { status: 'passed', actual: show(values[0]) }, started);
    },
    unless(site, cond, values) {
      const started = now();
      let failed;
      try {
        failed = cond();
      } catch (err) {
        return errored(site, err, started);
      }
      const fields = {};
      if (values) {
        try {
          const [actual, expected] = values();
          fields.actual = show(actual);
          fields.expected = show(expected);
        } catch (err) {
          // Values are only for display.
        }
      }
      record(site, Object.assign(fields, failed
        ? { status: 'failed', error_type: 'AssertionError', message: 'the check failed' }
        : { status: 'passed' }), started);
    },
    error(site, err) {
      errored(site, err, now());
    },
    count: () => count,
  };
}

module.exports = { VALUE_CAP, cap, errorType, errorMessage, isAssertionError, makeRecorder };
