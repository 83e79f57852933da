using System.Text;

namespace Serverlab.Contract;

/// <summary>
/// A status and a body, ready to write. Every body is ASCII and is sent with
/// <see cref="ContentType"/> and an exact Content-Length; the bytes may be shared
/// between requests, hence read-only.
/// </summary>
/// <param name="Status">The HTTP status code.</param>
/// <param name="Body">The body bytes.</param>
public readonly record struct Reply(int Status, ReadOnlyMemory<byte> Body)
{
    /// <summary>The Content-Type of every 200 and 400, spelled exactly as the contract does.</summary>
    public const string ContentType = "text/plain; charset=utf-8";

    /// <summary>The Allow header of a 405: the methods of both routes.</summary>
    public const string Allow = "GET, HEAD";

    /// <summary>Body of the 400 for a bad <c>n</c>.</summary>
    public const string NError = "n must be an integer between 1 and 100";

    /// <summary>Body of the 400 for a bad <c>at</c>.</summary>
    public const string AtError = "at must be a local time formatted YYYY-MM-DDTHH:MM[:SS]";

    /// <summary>The 400 for a bad <c>n</c>.</summary>
    public static readonly Reply BadN = Of(400, NError);

    /// <summary>The 400 for a bad <c>at</c>.</summary>
    public static readonly Reply BadAt = Of(400, AtError);

    /// <summary>A reply whose body is <paramref name="text"/> in UTF-8.</summary>
    public static Reply Of(int status, string text) => new(status, Encoding.UTF8.GetBytes(text));

    /// <summary>The body as text, for tests and diagnostics.</summary>
    public string Text => Encoding.UTF8.GetString(Body.Span);
}
