/*
 * The JSON helpers of the knowledge extraction: compact_json, then split_json further down.
 *
 * compact_json: JSON text without its whitespace, with the \uXXXX escapes of visible
 * characters decoded to UTF-8, in one pass.
 *
 * The knowledge extraction writes a large JSON file as a markdown outline
 * (apps/knowledge/extraction/json_outline.py). A file that json.dumps wrote with its default
 * ensure_ascii=True has every non-ASCII character as an escape; in Python, compacting it,
 * finding the escapes that must stay and decoding the rest took longer than passing the whole
 * file through as text (docs/performance.md). Here it is one pass at memory speed, and the
 * outline is then written from text that reads as the same file written without escapes.
 *
 * What changes, only outside strings: the JSON whitespace (space, tab, line feed, carriage
 * return) is dropped. Inside strings: "\/" becomes "/"; "\uXXXX" becomes the character in
 * UTF-8, a surrogate pair the one character it encodes, except escapes that must stay so
 * that each piece of the text is still valid JSON and shows no control character: quote,
 * backslash and the C0 and C1 controls (U+0000-U+001F, U+007F-U+009F), and lone surrogates.
 * Those, the two-character escapes (\" \\ \b \f \n \r \t) and every other byte are copied as
 * they are.
 *
 * The strings' UTF-8 is checked: the result is None if a string holds bytes that are not
 * UTF-8, so that every string of the result is UTF-8 and text made of its pieces needs no
 * decoding to be known valid. The rest is not validated: invalid JSON comes out as invalid
 * JSON (a bad escape is copied as it is, whitespace between two numbers or words is kept),
 * for the parser that reads the result to refuse. The result is never longer than the input,
 * since an escape's UTF-8 is shorter than the escape.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <string.h>
#ifdef __SSE2__
#include <emmintrin.h>
#endif

/* Bytes that end a run of bytes copied as they are: outside strings, whitespace and the
 * quote that opens a string; inside, the closing quote and an escape's backslash. */
static const unsigned char ENDS_RUN[256] = {
    [' '] = 1, ['\t'] = 1, ['\n'] = 1, ['\r'] = 1, ['"'] = 1,
};
/* Inside strings also bytes past ASCII, whose UTF-8 is checked. */
static const unsigned char ENDS_STRING_RUN[256] = {
    ['"'] = 1, ['\\'] = 1, [0x80 ... 0xFF] = 1,
};

/* The bytes that numbers, true, false and null are made of: whitespace between two of them
 * is kept, as only such a pair could join two invalid pieces into one valid token. */
static const unsigned char IN_TOKEN[256] = {
    ['0'] = 1, ['1'] = 1, ['2'] = 1, ['3'] = 1, ['4'] = 1, ['5'] = 1, ['6'] = 1, ['7'] = 1,
    ['8'] = 1, ['9'] = 1, ['-'] = 1, ['+'] = 1, ['.'] = 1, ['e'] = 1, ['E'] = 1, ['t'] = 1,
    ['r'] = 1, ['u'] = 1, ['f'] = 1, ['a'] = 1, ['l'] = 1, ['s'] = 1, ['n'] = 1,
};

/* Hex digit values plus one; 0 for a byte that is not a hex digit. */
static const unsigned char HEX_PLUS_ONE[256] = {
    ['0'] = 1,  ['1'] = 2,  ['2'] = 3,  ['3'] = 4,  ['4'] = 5,  ['5'] = 6,  ['6'] = 7,
    ['7'] = 8,  ['8'] = 9,  ['9'] = 10, ['a'] = 11, ['b'] = 12, ['c'] = 13, ['d'] = 14,
    ['e'] = 15, ['f'] = 16, ['A'] = 11, ['B'] = 12, ['C'] = 13, ['D'] = 14, ['E'] = 15,
    ['F'] = 16,
};

/* The code unit of the four hex digits at p, or -1. A byte that is not a digit gives
 * 0 - 1, which wraps to a value past 15: one test for the four. */
static long hex4(const unsigned char *p)
{
    unsigned a = HEX_PLUS_ONE[p[0]] - 1u, b = HEX_PLUS_ONE[p[1]] - 1u;
    unsigned c = HEX_PLUS_ONE[p[2]] - 1u, d = HEX_PLUS_ONE[p[3]] - 1u;
    if ((a | b | c | d) > 15)
        return -1;
    return (long)((a << 12) | (b << 8) | (c << 4) | d);
}

/* An escape that stays escaped: quote, backslash, C0 and C1 controls. */
static int stays_escaped(long code)
{
    return code < 0x20 || code == 0x22 || code == 0x5c || (code >= 0x7f && code <= 0x9f);
}

static Py_ssize_t write_utf8(unsigned char *out, long code)
{
    if (code < 0x80) {
        out[0] = (unsigned char)code;
        return 1;
    }
    if (code < 0x800) {
        out[0] = (unsigned char)(0xC0 | (code >> 6));
        out[1] = (unsigned char)(0x80 | (code & 0x3F));
        return 2;
    }
    if (code < 0x10000) {
        out[0] = (unsigned char)(0xE0 | (code >> 12));
        out[1] = (unsigned char)(0x80 | ((code >> 6) & 0x3F));
        out[2] = (unsigned char)(0x80 | (code & 0x3F));
        return 3;
    }
    out[0] = (unsigned char)(0xF0 | (code >> 18));
    out[1] = (unsigned char)(0x80 | ((code >> 12) & 0x3F));
    out[2] = (unsigned char)(0x80 | ((code >> 6) & 0x3F));
    out[3] = (unsigned char)(0x80 | (code & 0x3F));
    return 4;
}

/* The escape at in[i] (a backslash, i + 1 < n) written to out: returns the input bytes read
 * and adds the output bytes written to *o. */
static Py_ssize_t copy_escape(const unsigned char *in, Py_ssize_t i, Py_ssize_t n,
                              unsigned char *out, Py_ssize_t *o)
{
    unsigned char kind = in[i + 1];
    if (kind == '/') {
        out[(*o)++] = '/';
        return 2;
    }
    if (kind != 'u' || i + 6 > n) {
        out[(*o)++] = '\\';
        out[(*o)++] = kind;
        return 2;
    }
    long code = hex4(in + i + 2);
    if (code >= 0xA0 && (code < 0xD800 || code > 0xDFFF)) { /* the common case: decoded */
        *o += write_utf8(out + *o, code);
        return 6;
    }
    if (code >= 0xD800 && code <= 0xDBFF) {
        /* A high surrogate decodes only with the low one after it. */
        long low = -1;
        if (i + 12 <= n && in[i + 6] == '\\' && in[i + 7] == 'u')
            low = hex4(in + i + 8);
        if (low >= 0xDC00 && low <= 0xDFFF) {
            *o += write_utf8(out + *o, 0x10000 + ((code - 0xD800) << 10) + (low - 0xDC00));
            return 12;
        }
    } else if (code >= 0 && !(code >= 0xDC00 && code <= 0xDFFF) && !stays_escaped(code)) {
        *o += write_utf8(out + *o, code);
        return 6;
    }
    memcpy(out + *o, in + i, 6);
    *o += 6;
    return 6;
}

/* The length of the UTF-8 sequence at in[i] (its first byte past ASCII), or 0 if it is not
 * one (RFC 3629: no overlong forms, no surrogates, nothing past U+10FFFF). */
static Py_ssize_t utf8_length(const unsigned char *in, Py_ssize_t i, Py_ssize_t n)
{
    unsigned char lead = in[i];
    Py_ssize_t length;
    unsigned char low = 0x80, high = 0xBF; /* the range of the second byte */
    if (lead >= 0xC2 && lead <= 0xDF)
        length = 2;
    else if (lead >= 0xE0 && lead <= 0xEF) {
        length = 3;
        if (lead == 0xE0)
            low = 0xA0;
        else if (lead == 0xED)
            high = 0x9F;
    } else if (lead >= 0xF0 && lead <= 0xF4) {
        length = 4;
        if (lead == 0xF0)
            low = 0x90;
        else if (lead == 0xF4)
            high = 0x8F;
    } else
        return 0;
    if (i + length > n || in[i + 1] < low || in[i + 1] > high)
        return 0;
    for (Py_ssize_t k = 2; k < length; k++)
        if ((in[i + k] & 0xC0) != 0x80)
            return 0;
    return length;
}

/* The bytes of a string from in[i] up to its closing quote, next escape or next byte past
 * ASCII, copied to out[o..] 16 at a time; returns how many. Each block of 16 is stored before it is looked at: out has
 * room, since o <= i always and the block is within the input. */
static Py_ssize_t copy_string_run(const unsigned char *in, Py_ssize_t i, Py_ssize_t n,
                                  unsigned char *out, Py_ssize_t o)
{
    Py_ssize_t start = i;
#ifdef __SSE2__
    const __m128i quote = _mm_set1_epi8('"'), backslash = _mm_set1_epi8('\\');
    while (i + 16 <= n) {
        __m128i block = _mm_loadu_si128((const __m128i *)(in + i));
        /* Quotes, backslashes and (the high bit of each byte) bytes past ASCII. */
        unsigned mask = (unsigned)_mm_movemask_epi8(_mm_or_si128(
            block, _mm_or_si128(_mm_cmpeq_epi8(block, quote), _mm_cmpeq_epi8(block, backslash))));
        _mm_storeu_si128((__m128i *)(out + o + (i - start)), block);
        if (mask != 0)
            return i - start + __builtin_ctz(mask);
        i += 16;
    }
#endif
    while (i < n && !ENDS_STRING_RUN[in[i]]) {
        out[o + (i - start)] = in[i];
        i++;
    }
    return i - start;
}

/* Spaces from in[i], 16 at a time: indentation after a line feed. */
static Py_ssize_t count_spaces(const unsigned char *in, Py_ssize_t i, Py_ssize_t n)
{
    Py_ssize_t start = i;
#ifdef __SSE2__
    const __m128i space = _mm_set1_epi8(' ');
    while (i + 16 <= n) {
        unsigned mask = (unsigned)_mm_movemask_epi8(
            _mm_cmpeq_epi8(_mm_loadu_si128((const __m128i *)(in + i)), space));
        if (mask != 0xFFFF)
            return i - start + __builtin_ctz(~mask);
        i += 16;
    }
#endif
    while (i < n && in[i] == ' ')
        i++;
    return i - start;
}

/* Writes the compacted text of in[0..n) to out and the whitespace dropped to *dropped;
 * returns the length written, or -1 if a string holds bytes that are not UTF-8. */
static Py_ssize_t compact(const unsigned char *in, Py_ssize_t n, unsigned char *out,
                          Py_ssize_t *dropped)
{
    Py_ssize_t i = 0, o = 0, whitespace = 0;
    while (i < n) {
        unsigned char c = in[i++];
        if (!ENDS_RUN[c]) {
            out[o++] = c;
            continue;
        }
        if (c != '"') {
            Py_ssize_t spaces = count_spaces(in, i, n);
            whitespace += 1 + spaces;
            i += spaces;
            if (i < n && IN_TOKEN[in[i]] && o > 0 && IN_TOKEN[out[o - 1]]) {
                /* "[1 2]" or "tr ue": invalid, and it must not become "[12]" or "true". */
                out[o++] = ' ';
                whitespace--;
            }
            continue;
        }
        out[o++] = '"';
        while (i < n) {
            Py_ssize_t run = copy_string_run(in, i, n, out, o);
            i += run;
            o += run;
            if (i >= n)
                break;
            if (in[i] == '"') {
                out[o++] = '"';
                i++;
                break;
            }
            if (in[i] >= 0x80) {
                Py_ssize_t length = utf8_length(in, i, n);
                if (length == 0)
                    return -1;
                memcpy(out + o, in + i, length);
                i += length;
                o += length;
                continue;
            }
            if (i + 1 >= n) { /* a backslash that ends the input: invalid, copied */
                out[o++] = in[i++];
                break;
            }
            i += copy_escape(in, i, n, out, &o);
        }
    }
    *dropped = whitespace;
    return o;
}

static PyObject *compact_json(PyObject *Py_UNUSED(module), PyObject *data)
{
    Py_buffer view;
    if (PyObject_GetBuffer(data, &view, PyBUF_SIMPLE) < 0)
        return NULL;
    PyObject *result = PyBytes_FromStringAndSize(NULL, view.len);
    if (result == NULL) {
        PyBuffer_Release(&view);
        return NULL;
    }
    Py_ssize_t length, dropped;
    Py_BEGIN_ALLOW_THREADS
    length = compact((const unsigned char *)view.buf, view.len,
                     (unsigned char *)PyBytes_AS_STRING(result), &dropped);
    Py_END_ALLOW_THREADS
    PyBuffer_Release(&view);
    if (length < 0) {
        Py_DECREF(result);
        Py_RETURN_NONE;
    }
    if (_PyBytes_Resize(&result, length) < 0)
        return NULL;
    return Py_BuildValue("(Nn)", result, dropped);
}

/* ---- split_json: the members of a compact, valid JSON object or array ---- */

/* The index after the closing quote of the string whose content starts at in[i]. */
static Py_ssize_t skip_string(const unsigned char *in, Py_ssize_t i, Py_ssize_t n)
{
#ifdef __SSE2__
    const __m128i quote = _mm_set1_epi8('"'), backslash = _mm_set1_epi8('\\');
#endif
    while (i < n) {
#ifdef __SSE2__
        if (i + 16 <= n) {
            __m128i block = _mm_loadu_si128((const __m128i *)(in + i));
            unsigned mask = (unsigned)_mm_movemask_epi8(
                _mm_or_si128(_mm_cmpeq_epi8(block, quote), _mm_cmpeq_epi8(block, backslash)));
            if (mask == 0) {
                i += 16;
                continue;
            }
            i += __builtin_ctz(mask);
        }
#endif
        if (in[i] == '"')
            return i + 1;
        i += in[i] == '\\' ? 2 : 1;
    }
    return n;
}

#ifdef __SSE2__
/* 64 bytes as four SSE2 registers, compared a byte value at a time into a 64-bit mask. */
typedef struct {
    __m128i part[4];
} Block;

static Block load_block(const unsigned char *p)
{
    Block block;
    for (int k = 0; k < 4; k++)
        block.part[k] = _mm_loadu_si128((const __m128i *)(p + 16 * k));
    return block;
}

static uint64_t mask_of(const Block *block, char byte)
{
    const __m128i wanted = _mm_set1_epi8(byte);
    uint64_t mask = 0;
    for (int k = 0; k < 4; k++)
        mask |= (uint64_t)(unsigned)_mm_movemask_epi8(_mm_cmpeq_epi8(block->part[k], wanted))
                << (16 * k);
    return mask;
}

/* Bit k of the result is the XOR of bits 0..k: between an opening quote (included) and its
 * closing quote (excluded), 1. */
static uint64_t prefix_xor(uint64_t bits)
{
    bits ^= bits << 1;
    bits ^= bits << 2;
    bits ^= bits << 4;
    bits ^= bits << 8;
    bits ^= bits << 16;
    bits ^= bits << 32;
    return bits;
}
#endif

/* The index after the object or array that starts at in[i] (compact, valid JSON). A block of
 * 64 bytes without a backslash is read at once: the quotes' prefix XOR marks the bytes inside
 * strings, and the brackets outside them are counted. A block with a backslash (an escape
 * could hide a quote) and the input's last bytes are read one at a time. */
static Py_ssize_t skip_container(const unsigned char *in, Py_ssize_t i, Py_ssize_t n)
{
    Py_ssize_t depth = 0;
    int in_string = 0;
    while (i < n) {
#ifdef __SSE2__
        if (i + 64 <= n) {
            Block block = load_block(in + i);
            if (mask_of(&block, '\\') == 0) {
                uint64_t opens = mask_of(&block, '{') | mask_of(&block, '[');
                uint64_t closes = mask_of(&block, '}') | mask_of(&block, ']');
                uint64_t inside = prefix_xor(mask_of(&block, '"'));
                if (in_string)
                    inside = ~inside;
                opens &= ~inside;
                for (uint64_t brackets = (opens | closes) & ~inside; brackets != 0;
                     brackets &= brackets - 1) {
                    int bit = __builtin_ctzll(brackets);
                    if ((opens >> bit) & 1)
                        depth++;
                    else if (--depth == 0)
                        return i + bit + 1;
                }
                in_string = (int)(inside >> 63);
                i += 64;
                continue;
            }
        }
#endif
        Py_ssize_t end = i + 64 < n ? i + 64 : n;
        while (i < end) {
            unsigned char c = in[i++];
            if (in_string) {
                if (c == '\\')
                    i++;
                else if (c == '"')
                    in_string = 0;
            } else if (c == '"')
                in_string = 1;
            else if (c == '{' || c == '[')
                depth++;
            else if ((c == '}' || c == ']') && --depth == 0)
                return i;
        }
    }
    return n;
}

/* The index after the value that starts at in[i]. */
static Py_ssize_t skip_value(const unsigned char *in, Py_ssize_t i, Py_ssize_t n)
{
    if (in[i] == '"')
        return skip_string(in, i + 1, n);
    if (in[i] == '{' || in[i] == '[')
        return skip_container(in, i, n);
    while (i < n && in[i] != ',' && in[i] != '}' && in[i] != ']') /* number, true, ... */
        i++;
    return i;
}

/* Appends view[start:end] to list; -1 on error. */
static int append_slice(PyObject *list, PyObject *view, Py_ssize_t start, Py_ssize_t end)
{
    PyObject *slice = PySequence_GetSlice(view, start, end);
    if (slice == NULL)
        return -1;
    int result = PyList_Append(list, slice);
    Py_DECREF(slice);
    return result;
}

static PyObject *split_json(PyObject *Py_UNUSED(module), PyObject *data)
{
    PyObject *view = PyMemoryView_FromObject(data);
    if (view == NULL)
        return NULL;
    Py_buffer *buffer = PyMemoryView_GET_BUFFER(view);
    const unsigned char *in = buffer->buf;
    Py_ssize_t n = buffer->len, i = 1;
    PyObject *result = NULL;
    if (n < 2 || (in[0] != '{' && in[0] != '['))
        goto not_a_container;
    int is_object = in[0] == '{';
    result = is_object ? PyDict_New() : PyList_New(0);
    if (result == NULL)
        goto error;
    while (i < n && in[i] != '}' && in[i] != ']') {
        PyObject *key = NULL;
        if (is_object) {
            Py_ssize_t key_end = in[i] == '"' ? skip_string(in, i + 1, n) - 1 : i;
            if (key_end <= i || key_end + 2 >= n || in[key_end] != '"' || in[key_end + 1] != ':')
                goto malformed;
            if (memchr(in + i + 1, '\\', key_end - i - 1) != NULL) {
                /* An escaped key: msgspec decodes it. */
                Py_CLEAR(result);
                goto not_a_container;
            }
            key = PyUnicode_DecodeUTF8((const char *)in + i + 1, key_end - i - 1, NULL);
            if (key == NULL)
                goto error;
            i = key_end + 2; /* past the quote and the colon */
        }
        Py_ssize_t start = i;
        i = skip_value(in, i, n);
        if (is_object) {
            PyObject *slice = PySequence_GetSlice(view, start, i);
            int failed = slice == NULL || PyDict_SetItem(result, key, slice) < 0;
            Py_XDECREF(slice);
            Py_DECREF(key);
            if (failed)
                goto error;
        } else if (append_slice(result, view, start, i) < 0)
            goto error;
        if (i >= n)
            goto malformed;
        if (in[i] == ',')
            i++;
        else if (in[i] != (is_object ? '}' : ']'))
            goto malformed;
    }
    Py_DECREF(view);
    return result;

malformed: /* not compact valid JSON: said, rather than read past the end */
    PyErr_SetString(PyExc_ValueError, "split_json needs compact, valid JSON");
    goto error;

not_a_container:
    Py_DECREF(view);
    Py_RETURN_NONE;
error:
    Py_XDECREF(result);
    Py_DECREF(view);
    return NULL;
}

PyDoc_STRVAR(split_json_doc,
"split_json(data, /)\n--\n\n"
"The members of the JSON object or array ``data``, which must be compact and valid (as\n"
"msgspec has read it): a dict of keys to memoryview slices of ``data``, or a list of them.\n"
"None if ``data`` is neither, or if a key has an escape (msgspec decodes those);\n"
"ValueError for some malformed text, never a read past its end.");

PyDoc_STRVAR(compact_json_doc,
"compact_json(data, /)\n--\n\n"
"The JSON text ``data`` (a bytes-like object) without whitespace outside strings, with the\n"
"``\\uXXXX`` escapes of visible characters decoded to UTF-8 and ``\\/`` to ``/``, and the\n"
"number of whitespace bytes dropped. Escapes of quote, backslash, control characters and\n"
"lone surrogates stay as they are. None if a string holds bytes that are not UTF-8; the\n"
"rest is not validated.");

static PyMethodDef methods[] = {
    {"compact_json", compact_json, METH_O, compact_json_doc},
    {"split_json", split_json, METH_O, split_json_doc},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT,
    .m_name = "console_native._json",
    .m_doc = "The console's JSON helpers in C.",
    .m_size = -1,
    .m_methods = methods,
};

PyMODINIT_FUNC PyInit__json(void)
{
    return PyModule_Create(&module);
}
