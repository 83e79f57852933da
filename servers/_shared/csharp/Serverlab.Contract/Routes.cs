using System.Globalization;
using System.Text;

namespace Serverlab.Contract;

/// <summary>
/// The two routes of contract v1, independent of any web framework. Thread-safe:
/// the n-KB bodies and the error bodies are built once; hello and workday are
/// computed for every request.
/// </summary>
public sealed class Routes
{
    /// <summary>Exchange local time: Asia/Shanghai is a fixed UTC+08:00 (no DST since 1991).</summary>
    public static readonly TimeSpan ExchangeOffset = TimeSpan.FromHours(8);

    /// <summary>The path of the hello and n-KB route.</summary>
    public const string RootPath = "/";

    /// <summary>The path of the workday route.</summary>
    public const string WorkdayPath = "/workday";

    // UTC, milliseconds always three digits ("fff", never .NET's "FFF", which drops zeros).
    private const string HelloTimeFormat = "yyyy-MM-dd HH:mm:ss.fff";
    private const int HelloTimeLength = 23;
    private const int DayLength = 10;

    private readonly byte[] _helloPrefix;
    private readonly TradingCalendar _calendar;
    private readonly TimeProvider _clock;
    private readonly Reply[] _kilobytes; // _kilobytes[n]: n x 1000 'X', built once

    /// <summary>Creates the routes for one stack.</summary>
    /// <param name="displayName">The stack's display name, used verbatim in the hello body (printable ASCII, no '!').</param>
    /// <param name="calendar">The trading calendar.</param>
    /// <param name="clock">The source of "now": <see cref="TimeProvider.System"/> in production.</param>
    public Routes(string displayName, TradingCalendar calendar, TimeProvider clock)
    {
        ArgumentNullException.ThrowIfNull(displayName);
        ArgumentNullException.ThrowIfNull(calendar);
        ArgumentNullException.ThrowIfNull(clock);
        if (displayName.Length == 0 || displayName.Contains('!')
            || !displayName.All(c => c is >= ' ' and <= '~'))
        {
            throw new ArgumentException(
                $"display name '{displayName}' must be printable ASCII without '!'", nameof(displayName));
        }
        DisplayName = displayName;
        _helloPrefix = Encoding.ASCII.GetBytes($"Hello World, from {displayName}! ");
        _calendar = calendar;
        _clock = clock;
        _kilobytes = new Reply[Parameters.MaxKilobytes + 1];
        for (int n = 1; n <= Parameters.MaxKilobytes; n++)
        {
            byte[] body = new byte[n * 1000];
            body.AsSpan().Fill((byte)'X');
            _kilobytes[n] = new Reply(200, body);
        }
    }

    /// <summary>Creates the routes for one stack on the system clock.</summary>
    public Routes(string displayName, TradingCalendar calendar)
        : this(displayName, calendar, TimeProvider.System)
    {
    }

    /// <summary>The stack's display name, as in the hello body.</summary>
    public string DisplayName { get; }

    /// <summary>
    /// <c>GET /</c>: hello without <c>n</c> or with an empty one, else an n-KB body or 400.
    /// </summary>
    /// <param name="rawQuery">The query string as sent, without the <c>?</c>; empty if none.</param>
    public Reply Root(ReadOnlySpan<char> rawQuery)
    {
        QueryParam n = FormQuery.Lookup(rawQuery, "n");
        switch (n.Presence)
        {
            case Presence.Absent:
                return Hello();
            case Presence.Once when n.Value is "":
                return Hello();
            case Presence.Once when n.Value is not null:
                int kb = Parameters.ParseKilobytes(n.Value);
                return kb == 0 ? Reply.BadN : _kilobytes[kb];
            default: // repeated, or not decodable
                return Reply.BadN;
        }
    }

    /// <summary>
    /// <c>GET /workday</c>: the trading day of <c>at</c>, or of now without it; else 400.
    /// </summary>
    /// <param name="rawQuery">The query string as sent, without the <c>?</c>; empty if none.</param>
    public Reply Workday(ReadOnlySpan<char> rawQuery)
    {
        QueryParam at = FormQuery.Lookup(rawQuery, "at");
        DateTime? time = at.Presence switch
        {
            Presence.Absent => Now(),
            Presence.Once when at.Value is not null => Parameters.ParseLocalTime(at.Value),
            _ => null,
        };
        return time is { } local ? Day(_calendar.TradingDayOf(local)) : Reply.BadAt;
    }

    /// <summary>The hello body for the current time; never cached.</summary>
    public Reply Hello()
    {
        DateTime utc = _clock.GetUtcNow().UtcDateTime;
        byte[] body = new byte[_helloPrefix.Length + HelloTimeLength];
        _helloPrefix.CopyTo(body, 0);
        if (!utc.TryFormat(body.AsSpan(_helloPrefix.Length), out int written, HelloTimeFormat, CultureInfo.InvariantCulture)
            || written != HelloTimeLength)
        {
            throw new InvalidOperationException($"cannot format {utc:O} as {HelloTimeFormat}");
        }
        return new Reply(200, body);
    }

    /// <summary>Exchange-local now, in whole seconds.</summary>
    private DateTime Now()
    {
        DateTime local = _clock.GetUtcNow().UtcDateTime + ExchangeOffset;
        return new DateTime(local.Ticks - (local.Ticks % TimeSpan.TicksPerSecond), DateTimeKind.Unspecified);
    }

    private static Reply Day(DateOnly day)
    {
        byte[] body = new byte[DayLength];
        if (!day.TryFormat(body, out int written, "yyyy-MM-dd", CultureInfo.InvariantCulture) || written != DayLength)
        {
            throw new InvalidOperationException($"cannot format {day.DayNumber} as yyyy-MM-dd");
        }
        return new Reply(200, body);
    }
}
