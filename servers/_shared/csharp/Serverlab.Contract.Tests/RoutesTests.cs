using System.Globalization;

namespace Serverlab.Contract.Tests;

/// <summary>Edge cases of the shared logic beyond the vectors.</summary>
public sealed class RoutesTests
{
    private static Routes At(string instant) =>
        new("C# Test", Repository.Calendar, FixedClock.At(instant));

    private static string Iso(DateOnly day) => day.ToString("yyyy-MM-dd", CultureInfo.InvariantCulture);

    [Fact]
    public void HelloIsUtcWithThreeDigitMilliseconds()
    {
        Assert.Equal("Hello World, from C# Test! 2019-05-05 02:00:00.000", At("2019-05-05T02:00:00Z").Hello().Text);
        Assert.Equal("Hello World, from C# Test! 2026-12-31 23:59:59.007", At("2026-12-31T23:59:59.0079999Z").Root("").Text);
        Assert.Equal("Hello World, from C# Test! 2026-11-22 02:15:30.040", At("2026-11-22T02:15:30.04Z").Root("n=").Text);
    }

    [Fact]
    public void HelloIsUtcWhateverTheClockOffset()
    {
        var clock = new FixedClock(new DateTimeOffset(2019, 5, 5, 10, 0, 0, 500, TimeSpan.FromHours(8)));
        var routes = new Routes("C# Test", Repository.Calendar, clock);
        Assert.Equal("Hello World, from C# Test! 2019-05-05 02:00:00.500", routes.Hello().Text);
    }

    [Fact]
    public void HelloIsFreshEachRequest()
    {
        var routes = new Routes("C# Test", Repository.Calendar);
        Reply first = routes.Root("");
        Reply second = routes.Root("");
        Assert.False(first.Body.Span == second.Body.Span, "a new body per request");
        Assert.Equal(first.Body.Length, second.Body.Length);
    }

    [Fact]
    public void KilobyteBodiesAreBuiltOnce()
    {
        Routes routes = At("2019-05-05T02:00:00Z");
        Assert.True(routes.Root("n=7").Body.Span == routes.Root("n=007").Body.Span, "the same bytes");
        Assert.Equal(100_000, routes.Root("n=100").Body.Length);
        Assert.Equal(1000, routes.Root("n=%31").Body.Length);
    }

    [Fact]
    public void WorkdayNowUsesShanghaiTimeInWholeSeconds()
    {
        // 07:00:00.999 UTC is 15:00:00.999 in Shanghai: whole seconds make it 15:00:00, the close.
        Assert.Equal("2019-04-30", At("2019-04-30T07:00:00.999Z").Workday("").Text);
        Assert.Equal("2019-05-06", At("2019-04-30T07:00:01Z").Workday("").Text);
        // 16:30 UTC on Sunday is 00:30 on Monday in Shanghai; n is not a parameter of /workday.
        Assert.Equal("2019-05-06", At("2019-05-05T16:30:00Z").Workday("n=5").Text);
    }

    [Theory]
    [InlineData("at=", 400)]
    [InlineData("at", 400)] // no '=': an empty value, and an empty at is not "now"
    [InlineData("at=%ZZ", 400)]
    [InlineData("at=2019-05-05T10:00&at=2019-05-05T10:00", 400)]
    [InlineData("%61t=2019-05-05T10:00", 200)] // an encoded name counts as what it decodes to
    [InlineData("at=2019-05-05T10%3a00", 200)] // lower-case hex
    [InlineData("AT=x&at=2019-05-05T10:00", 200)] // names are case-sensitive: AT is unknown
    [InlineData("x=%ZZ&at=2019-05-05T10:00", 200)] // a malformed unknown parameter is ignored
    public void WorkdayQueries(string raw, int status)
    {
        Reply reply = At("2019-05-05T02:00:00Z").Workday(raw);
        Assert.Equal(status, reply.Status);
        if (status == 200)
        {
            Assert.Equal("2019-05-06", reply.Text);
        }
    }

    [Theory]
    [InlineData("n=1&n=2")]
    [InlineData("n&n")]
    [InlineData("n&%6e=")]
    [InlineData("n=%")]
    [InlineData("n=%4")]
    [InlineData("n=%C3%A9")]
    [InlineData("n=1%0")]
    public void RootBadQueries(string raw)
    {
        Assert.Equal(Reply.BadN, At("2019-05-05T02:00:00Z").Root(raw));
    }

    [Fact]
    public void RepliesCarryTheExactErrorBodies()
    {
        Assert.Equal("n must be an integer between 1 and 100", Reply.BadN.Text);
        Assert.Equal("at must be a local time formatted YYYY-MM-DDTHH:MM[:SS]", Reply.BadAt.Text);
        Assert.Equal(400, Reply.BadN.Status);
        Assert.Equal(400, Reply.BadAt.Status);
        Assert.Equal("text/plain; charset=utf-8", Reply.ContentType);
        Assert.Equal("GET, HEAD", Reply.Allow);
    }

    [Theory]
    [InlineData("")]
    [InlineData("Say hi!")]
    [InlineData("caf\u00e9")]
    [InlineData("tab\there")]
    public void DisplayNameMustBePrintableAsciiWithoutBang(string name)
    {
        Assert.Throws<ArgumentException>(() => new Routes(name, Repository.Calendar));
    }

    [Fact]
    public void OutsideTheCalendarRangeOnlyWeekendsAreClosed()
    {
        TradingCalendar calendar = Repository.Calendar;
        Assert.True(calendar.IsTradingDay(new DateOnly(2027, 1, 1))); // a Friday after the range
        Assert.False(calendar.IsTradingDay(new DateOnly(2027, 1, 2)));
        Assert.True(calendar.IsTradingDay(new DateOnly(2006, 12, 29))); // a Friday before it
        Assert.Equal("2200-01-01", Iso(calendar.TradingDayOf(Parameters.ParseLocalTime("2199-12-31T15:00:01")!.Value)));
        Assert.Equal("1970-01-01", Iso(calendar.TradingDayOf(Parameters.ParseLocalTime("1970-01-01T00:00")!.Value)));
    }

    [Fact]
    public void CalendarFormatIsChecked()
    {
        Assert.Throws<FormatException>(() => TradingCalendar.Parse(["2019-05-01"]));
        Assert.Throws<FormatException>(() => TradingCalendar.Parse(["# range: 2019-01-01 2019-12-31", "2019-5-1"]));
        Assert.Throws<FormatException>(() => TradingCalendar.Parse(["# range: 2019-01-01 2019-12-31", "2020-01-01"]));
        Assert.Throws<FormatException>(() => TradingCalendar.Parse(["# range: 2019-01-01"]));
        Assert.Throws<FormatException>(() => TradingCalendar.Parse(["# range: 2019-12-31 2019-01-01"]));
        Assert.Throws<FormatException>(() => TradingCalendar.Parse(["# range: 2019-01-01 2019-12-31", "2019-02-29"]));
        Assert.Throws<FormatException>(() => TradingCalendar.Parse(["# range: 2019-01-01 2019-12-31", "\u0662019-05-01"]));
        TradingCalendar calendar = TradingCalendar.Parse(
            ["# comment", "# range: 2019-01-01 2019-12-31", "", "  2019-05-01  ", "# 2019-05-02"]);
        Assert.False(calendar.IsTradingDay(new DateOnly(2019, 5, 1)));
        Assert.True(calendar.IsTradingDay(new DateOnly(2019, 5, 2)));
        Assert.Equal(new DateOnly(2019, 1, 1), calendar.First);
        Assert.Equal(new DateOnly(2019, 12, 31), calendar.Last);
    }

    [Fact]
    public void TheRepositoryCalendarIsRead()
    {
        TradingCalendar calendar = Repository.Calendar;
        Assert.Equal(new DateOnly(2007, 1, 1), calendar.First);
        Assert.Equal(new DateOnly(2026, 12, 31), calendar.Last);
        Assert.False(calendar.IsTradingDay(new DateOnly(2019, 5, 1))); // May Day
        Assert.True(calendar.IsTradingDay(new DateOnly(2019, 5, 6)));
    }

    [Fact]
    public void TheCloseBelongsToTheDay()
    {
        TradingCalendar calendar = Repository.Calendar;
        DateOnly Of(string at) => calendar.TradingDayOf(Parameters.ParseLocalTime(at)!.Value);
        Assert.Equal(new DateOnly(2019, 4, 30), Of("2019-04-30T15:00"));
        Assert.Equal(new DateOnly(2019, 4, 30), Of("2019-04-30T15:00:00"));
        Assert.Equal(new DateOnly(2019, 5, 6), Of("2019-04-30T15:00:01"));
        Assert.Equal(new DateOnly(2019, 4, 30), Of("2019-04-30T00:00:00"));
    }
}
