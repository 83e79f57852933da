namespace Serverlab.Contract;

/// <summary>
/// Strict parsers for the decoded values of <c>n</c> and <c>at</c>. Only ASCII
/// digits count as digits: <see cref="char.IsDigit(char)"/> and
/// <see cref="int.Parse(string)"/> accept other scripts' digits, signs, white
/// space and more, so neither is used.
/// </summary>
public static class Parameters
{
    /// <summary>The largest body, in kilobytes.</summary>
    public const int MaxKilobytes = 100;

    /// <summary>The first year an <c>at</c> may name.</summary>
    public const int MinYear = 1970;

    /// <summary>The last year an <c>at</c> may name.</summary>
    public const int MaxYear = 2199;

    /// <summary>
    /// The value of <c>n</c>: 1 to 3 ASCII digits with a value from 1 to
    /// <see cref="MaxKilobytes"/> (leading zeros allowed).
    /// </summary>
    /// <returns>The number of kilobytes, or 0 if <paramref name="value"/> is not such a number.</returns>
    public static int ParseKilobytes(ReadOnlySpan<char> value)
    {
        if (value.IsEmpty || value.Length > 3)
        {
            return 0;
        }
        int kb = Digits(value);
        return kb is >= 1 and <= MaxKilobytes ? kb : 0;
    }

    /// <summary>
    /// The value of <c>at</c>: exactly <c>YYYY-MM-DDTHH:MM</c> or
    /// <c>YYYY-MM-DDTHH:MM:SS</c>, a real date with a year from 1970 to 2199,
    /// hour 0 to 23, minute and second 0 to 59.
    /// </summary>
    /// <returns>
    /// The exchange-local time (<see cref="DateTimeKind.Unspecified"/>), or null
    /// if <paramref name="value"/> is not such a time.
    /// </returns>
    public static DateTime? ParseLocalTime(ReadOnlySpan<char> value)
    {
        int length = value.Length;
        if (length != 16 && length != 19)
        {
            return null;
        }
        if (value[4] != '-' || value[7] != '-' || value[10] != 'T' || value[13] != ':'
            || (length == 19 && value[16] != ':'))
        {
            return null;
        }
        int year = Digits(value[..4]);
        int month = Digits(value[5..7]);
        int day = Digits(value[8..10]);
        int hour = Digits(value[11..13]);
        int minute = Digits(value[14..16]);
        int second = length == 19 ? Digits(value[17..19]) : 0;
        if (year is < MinYear or > MaxYear
            || month is < 1 or > 12
            || day < 1 || day > DateTime.DaysInMonth(year, month)
            || hour is < 0 or > 23
            || minute is < 0 or > 59
            || second is < 0 or > 59)
        {
            return null;
        }
        return new DateTime(year, month, day, hour, minute, second, DateTimeKind.Unspecified);
    }

    /// <summary>The value of a run of ASCII digits (at most 9), or -1 if anything else is there.</summary>
    internal static int Digits(ReadOnlySpan<char> digits)
    {
        int value = 0;
        foreach (char c in digits)
        {
            if (c < '0' || c > '9')
            {
                return -1;
            }
            value = value * 10 + (c - '0');
        }
        return value;
    }
}
