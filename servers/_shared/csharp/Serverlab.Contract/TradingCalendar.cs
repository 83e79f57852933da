using System.Globalization;

namespace Serverlab.Contract;

/// <summary>
/// Trading days of the Shanghai Stock Exchange and the workday rule.
/// </summary>
/// <remarks>
/// Built once at start-up from the calendar file (comment lines starting with
/// <c>#</c>, one of them <c># range: FIRST LAST</c>, then one non-trading weekday
/// <c>YYYY-MM-DD</c> a line), so that requests never touch the file system. A
/// trading day is Monday to Friday and not listed; outside the file's range only
/// weekends are non-trading.
/// </remarks>
public sealed class TradingCalendar
{
    /// <summary>The daily close: a time up to and including it belongs to that trading day.</summary>
    public static readonly TimeSpan Close = new(15, 0, 0);

    private const string RangePrefix = "# range:";

    private readonly int _firstDay;
    private readonly int _lastDay;
    // _closed[d - _firstDay] for every day number d in the range: a flat array beats a hash lookup.
    private readonly bool[] _closed;

    private TradingCalendar(DateOnly first, DateOnly last, List<DateOnly> closedDays)
    {
        _firstDay = first.DayNumber;
        _lastDay = last.DayNumber;
        _closed = new bool[_lastDay - _firstDay + 1];
        foreach (DateOnly day in closedDays)
        {
            _closed[day.DayNumber - _firstDay] = true;
        }
    }

    /// <summary>The first day the file knows about.</summary>
    public DateOnly First => DateOnly.FromDayNumber(_firstDay);

    /// <summary>The last day the file knows about.</summary>
    public DateOnly Last => DateOnly.FromDayNumber(_lastDay);

    /// <summary>Reads the calendar file at <paramref name="path"/> (UTF-8).</summary>
    /// <exception cref="IOException">The file cannot be read.</exception>
    /// <exception cref="FormatException">A line breaks the format.</exception>
    public static TradingCalendar Load(string path) => Parse(File.ReadAllLines(path));

    /// <summary>Parses the lines of a calendar file.</summary>
    /// <exception cref="FormatException">Naming the first line that breaks the format.</exception>
    public static TradingCalendar Parse(IEnumerable<string> lines)
    {
        DateOnly? first = null;
        DateOnly? last = null;
        var closedDays = new List<DateOnly>();
        int number = 0;
        foreach (string line in lines)
        {
            number++;
            string text = line.Trim();
            if (text.StartsWith(RangePrefix, StringComparison.Ordinal))
            {
                string[] bounds = text[RangePrefix.Length..].Split(
                    (char[]?)null, StringSplitOptions.RemoveEmptyEntries);
                if (bounds.Length != 2)
                {
                    throw new FormatException($"line {number}: expected '# range: FIRST LAST'");
                }
                first = Date(bounds[0], number);
                last = Date(bounds[1], number);
                if (last < first)
                {
                    throw new FormatException($"line {number}: the range ends before it starts");
                }
            }
            else if (text.Length > 0 && !text.StartsWith('#'))
            {
                closedDays.Add(Date(text, number));
            }
        }
        if (first is not { } from || last is not { } to)
        {
            throw new FormatException("no '# range: FIRST LAST' line");
        }
        foreach (DateOnly day in closedDays)
        {
            if (day < from || day > to)
            {
                throw new FormatException($"{Iso(day)} lies outside the range {Iso(from)} {Iso(to)}");
            }
        }
        return new TradingCalendar(from, to, closedDays);
    }

    private static DateOnly Date(string text, int line)
    {
        // Exactly YYYY-MM-DD: ASCII digits, two-digit month and day.
        if (text.Length == 10 && text[4] == '-' && text[7] == '-')
        {
            int year = Parameters.Digits(text.AsSpan(0, 4));
            int month = Parameters.Digits(text.AsSpan(5, 2));
            int day = Parameters.Digits(text.AsSpan(8, 2));
            if (year >= 1 && month is >= 1 and <= 12 && day >= 1 && day <= DateTime.DaysInMonth(year, month))
            {
                return new DateOnly(year, month, day);
            }
        }
        throw new FormatException($"line {line}: not a YYYY-MM-DD date: {text}");
    }

    private static string Iso(DateOnly day) => day.ToString("yyyy-MM-dd", CultureInfo.InvariantCulture);

    /// <summary>Whether the exchange trades on <paramref name="day"/>.</summary>
    public bool IsTradingDay(DateOnly day)
    {
        if (day.DayOfWeek is DayOfWeek.Saturday or DayOfWeek.Sunday)
        {
            return false;
        }
        int number = day.DayNumber;
        return number < _firstDay || number > _lastDay || !_closed[number - _firstDay];
    }

    /// <summary>
    /// The trading day that exchange-local time <paramref name="time"/> belongs to:
    /// its own date if that is a trading day and <paramref name="time"/> is at or
    /// before the close, else the next trading day.
    /// </summary>
    public DateOnly TradingDayOf(DateTime time)
    {
        DateOnly day = DateOnly.FromDateTime(time);
        if (IsTradingDay(day) && time.TimeOfDay <= Close)
        {
            return day;
        }
        do
        {
            day = day.AddDays(1);
        }
        while (!IsTradingDay(day));
        return day;
    }
}
