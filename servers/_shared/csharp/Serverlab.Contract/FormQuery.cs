using System.Buffers;
using System.Text;
using System.Text.Unicode;

namespace Serverlab.Contract;

/// <summary>How often a parameter occurs in a query string.</summary>
public enum Presence
{
    /// <summary>Not there.</summary>
    Absent,

    /// <summary>Exactly once.</summary>
    Once,

    /// <summary>Twice or more (the contract's "given twice": a 400).</summary>
    Repeated,
}

/// <summary>The outcome of a <see cref="FormQuery.Lookup"/>.</summary>
/// <param name="Presence">How often the name occurs.</param>
/// <param name="Value">
/// The decoded value when it occurs once (<c>""</c> for a name without <c>=</c>);
/// null otherwise, and also when the value is not valid percent-encoded UTF-8.
/// </param>
public readonly record struct QueryParam(Presence Presence, string? Value)
{
    internal static readonly QueryParam Absent = new(Presence.Absent, null);
    internal static readonly QueryParam Repeated = new(Presence.Repeated, null);
    internal static readonly QueryParam Undecodable = new(Presence.Once, null);
}

/// <summary>
/// Looks up one parameter in a raw query string decoded as
/// <c>application/x-www-form-urlencoded</c>: pairs split on <c>&amp;</c>, name and
/// value on the first <c>=</c>, <c>+</c> is a space, <c>%XX</c> a byte, and the
/// bytes are UTF-8.
/// </summary>
/// <remarks>
/// Each route knows one parameter, so a single pass looks for that name only and
/// reports whether it came once, never or more than once. Other parameters are
/// never decoded, so a malformed unknown parameter is ignored like any other
/// unknown one. Framework query collections cannot be used instead: they keep
/// the last or the first of a repeated name, replace invalid escapes or bytes
/// silently, and decode names and values by rules that differ between frameworks.
/// </remarks>
public static class FormQuery
{
    private static readonly SearchValues<char> NeedsDecoding = SearchValues.Create("%+");

    /// <summary>
    /// Finds <paramref name="name"/> in <paramref name="rawQuery"/>: the query string
    /// as sent on the wire, still percent-encoded, without the leading <c>?</c>
    /// (empty when there is none).
    /// </summary>
    public static QueryParam Lookup(ReadOnlySpan<char> rawQuery, string name)
    {
        QueryParam found = QueryParam.Absent;
        while (!rawQuery.IsEmpty)
        {
            int amp = rawQuery.IndexOf('&');
            ReadOnlySpan<char> pair = amp < 0 ? rawQuery : rawQuery[..amp];
            rawQuery = amp < 0 ? [] : rawQuery[(amp + 1)..];
            if (pair.IsEmpty)
            {
                continue; // "a&&b": empty pairs are skipped
            }
            int eq = pair.IndexOf('=');
            ReadOnlySpan<char> rawName = eq < 0 ? pair : pair[..eq];
            if (!NameMatches(rawName, name))
            {
                continue;
            }
            if (found.Presence != Presence.Absent)
            {
                return QueryParam.Repeated;
            }
            string? value = eq < 0 ? "" : Decode(pair[(eq + 1)..]);
            found = value is null ? QueryParam.Undecodable : new QueryParam(Presence.Once, value);
        }
        return found;
    }

    private static bool NameMatches(ReadOnlySpan<char> rawName, string name)
    {
        if (!MayNeedDecoding(rawName))
        {
            return rawName.SequenceEqual(name);
        }
        return Decode(rawName) is { } decoded && decoded == name;
    }

    private static bool MayNeedDecoding(ReadOnlySpan<char> s) =>
        s.ContainsAny(NeedsDecoding) || !Ascii.IsValid(s);

    /// <summary>
    /// Decodes one name or value: <c>+</c> to a space, <c>%XX</c> to a byte, a raw
    /// non-ASCII character to its UTF-8 bytes; then the bytes as strict UTF-8.
    /// </summary>
    /// <returns>The text, or null for a malformed escape or bytes that are not UTF-8.</returns>
    public static string? Decode(ReadOnlySpan<char> s)
    {
        if (!MayNeedDecoding(s))
        {
            return s.ToString();
        }
        // At most 3 UTF-8 bytes per UTF-16 char (a surrogate pair: 4 bytes for 2 chars).
        int capacity = s.Length * 3;
        byte[]? rented = null;
        Span<byte> bytes = capacity <= 512
            ? stackalloc byte[512]
            : (rented = ArrayPool<byte>.Shared.Rent(capacity));
        try
        {
            int count = 0;
            for (int i = 0; i < s.Length; i++)
            {
                char c = s[i];
                if (c == '+')
                {
                    bytes[count++] = (byte)' ';
                }
                else if (c == '%')
                {
                    int hi = i + 2 < s.Length ? HexValue(s[i + 1]) : -1;
                    int lo = i + 2 < s.Length ? HexValue(s[i + 2]) : -1;
                    if (hi < 0 || lo < 0)
                    {
                        return null;
                    }
                    bytes[count++] = (byte)((hi << 4) | lo);
                    i += 2;
                }
                else if (c < 0x80)
                {
                    bytes[count++] = (byte)c;
                }
                else
                {
                    // A raw non-ASCII character (servers differ in passing these on): its UTF-8 bytes.
                    if (Rune.DecodeFromUtf16(s[i..], out Rune rune, out int used) != OperationStatus.Done)
                    {
                        return null; // a lone surrogate
                    }
                    count += rune.EncodeToUtf8(bytes[count..]);
                    i += used - 1;
                }
            }
            return Utf8ToString(bytes[..count]);
        }
        finally
        {
            if (rented is not null)
            {
                ArrayPool<byte>.Shared.Return(rented);
            }
        }
    }

    /// <summary>Strict UTF-8 (no replacement characters), or null.</summary>
    private static string? Utf8ToString(ReadOnlySpan<byte> utf8)
    {
        if (!Utf8.IsValid(utf8))
        {
            return null;
        }
        return Encoding.UTF8.GetString(utf8);
    }

    /// <summary>The value of an ASCII hex digit, or -1 (only ASCII counts).</summary>
    private static int HexValue(char c) => c switch
    {
        >= '0' and <= '9' => c - '0',
        >= 'a' and <= 'f' => c - 'a' + 10,
        >= 'A' and <= 'F' => c - 'A' + 10,
        _ => -1,
    };
}
