using System.Globalization;
namespace Serverlab.Contract.Tests;

/// <summary>The strict parsers and the query decoding, case by case.</summary>
public sealed class ParserTests
{
    [Theory]
    [InlineData("1", 1)]
    [InlineData("01", 1)]
    [InlineData("001", 1)]
    [InlineData("100", 100)]
    [InlineData("099", 99)]
    [InlineData("", 0)]
    [InlineData("0", 0)]
    [InlineData("00", 0)]
    [InlineData("101", 0)]
    [InlineData("0100", 0)]
    [InlineData("1.0", 0)]
    [InlineData(" 1", 0)]
    [InlineData("1 ", 0)]
    [InlineData("+1", 0)]
    [InlineData("-1", 0)]
    [InlineData("1_0", 0)]
    [InlineData("1e2", 0)]
    [InlineData("0x1", 0)]
    [InlineData("\u0661", 0)] // ARABIC-INDIC DIGIT ONE: char.IsDigit says yes
    [InlineData("\uff11", 0)] // FULLWIDTH DIGIT ONE
    [InlineData("\u00b9", 0)] // SUPERSCRIPT ONE
    [InlineData("1\0", 0)]
    [InlineData("\0", 0)]
    [InlineData("99999999999999999999999", 0)]
    public void Kilobytes(string value, int expected)
    {
        Assert.Equal(expected, Parameters.ParseKilobytes(value));
    }

    [Theory]
    [InlineData("2019-05-05T10:00", "2019-05-05T10:00:00")]
    [InlineData("2019-05-05T10:00:59", "2019-05-05T10:00:59")]
    [InlineData("2000-02-29T00:00", "2000-02-29T00:00:00")]
    [InlineData("2024-02-29T23:59:59", "2024-02-29T23:59:59")]
    [InlineData("1970-01-01T00:00:00", "1970-01-01T00:00:00")]
    [InlineData("2199-12-31T23:59:59", "2199-12-31T23:59:59")]
    public void ValidLocalTimes(string value, string expected)
    {
        DateTime? time = Parameters.ParseLocalTime(value);
        Assert.NotNull(time);
        Assert.Equal(expected, time.Value.ToString("yyyy-MM-ddTHH:mm:ss", CultureInfo.InvariantCulture));
        Assert.Equal(DateTimeKind.Unspecified, time.Value.Kind);
    }

    [Theory]
    [InlineData("")]
    [InlineData("2019-05-05")]
    [InlineData("2019-05-05T10")]
    [InlineData("2019-05-05 10:00")]
    [InlineData("2019-05-05t10:00")]
    [InlineData("2019-05-05T10:00:0")]
    [InlineData("2019-05-05T10:00:000")]
    [InlineData("2019-05-05T10:00.00")]
    [InlineData("2019/05/05T10:00")]
    [InlineData("2019-05-05T10-00")]
    [InlineData("+019-05-05T10:00")]
    [InlineData("-019-05-05T10:00")]
    [InlineData("2019-+5-05T10:00")]
    [InlineData("2019-05-05T+1:00")]
    [InlineData("2019-05-05T10:00:+1")]
    [InlineData("\uff12019-05-05T10:00")]
    [InlineData("2019-05-05T1\u0660:00")]
    [InlineData("1969-12-31T23:59:59")]
    [InlineData("2200-01-01T00:00")]
    [InlineData("0000-01-01T00:00")]
    [InlineData("2019-02-29T10:00")]
    [InlineData("2100-02-29T10:00")]
    [InlineData("2019-04-31T10:00")]
    [InlineData("2019-13-01T10:00")]
    [InlineData("2019-00-01T10:00")]
    [InlineData("2019-01-00T10:00")]
    [InlineData("2019-01-32T10:00")]
    [InlineData("2019-05-05T24:00")]
    [InlineData("2019-05-05T10:60")]
    [InlineData("2019-05-05T10:00:60")]
    [InlineData("2019-05-05T10:00Z")]
    [InlineData("2019-05-05T10:00:00Z")]
    [InlineData("2019-05-05T10:00:00\0")]
    public void InvalidLocalTimes(string value)
    {
        Assert.Null(Parameters.ParseLocalTime(value));
    }

    [Fact]
    public void LookupReportsPresence()
    {
        Assert.Equal(Presence.Absent, FormQuery.Lookup("", "n").Presence);
        Assert.Equal(Presence.Absent, FormQuery.Lookup("nn=1&=n&N=1&n1=2", "n").Presence);
        Assert.Equal(Presence.Absent, FormQuery.Lookup("&&&", "n").Presence);
        Assert.Equal(new QueryParam(Presence.Once, "1"), FormQuery.Lookup("&&n=1&&", "n"));
        Assert.Equal(new QueryParam(Presence.Once, ""), FormQuery.Lookup("n", "n"));
        Assert.Equal(new QueryParam(Presence.Once, ""), FormQuery.Lookup("n=", "n"));
        Assert.Equal(Presence.Repeated, FormQuery.Lookup("n=1&n=1", "n").Presence);
        Assert.Equal(Presence.Repeated, FormQuery.Lookup("n=&n=", "n").Presence);
        Assert.Equal(Presence.Repeated, FormQuery.Lookup("n&%6e=", "n").Presence);
        Assert.Null(FormQuery.Lookup("n=1&n=2", "n").Value);
    }

    [Fact]
    public void LookupDecodesNamesAndValues()
    {
        Assert.Equal("a b", FormQuery.Lookup("x=%ZZ&n=a+b", "n").Value);
        Assert.Equal("1=2", FormQuery.Lookup("%6E=1=2", "n").Value);
        Assert.Equal("5", FormQuery.Lookup("n=%35", "n").Value);
        Assert.Equal("\u00e9", FormQuery.Lookup("n=%C3%A9", "n").Value);
        Assert.Equal("\u00e9", FormQuery.Lookup("n=%c3%a9", "n").Value);
        Assert.Equal("\U0001F600", FormQuery.Lookup("n=%F0%9F%98%80", "n").Value);
        Assert.Equal("\0", FormQuery.Lookup("n=%00", "n").Value);
        Assert.Equal("+", FormQuery.Lookup("n=%2B", "n").Value);
        // Raw non-ASCII characters (some servers pass them on undecoded) count as their UTF-8 bytes.
        Assert.Equal("\u00e9\U0001F600", FormQuery.Lookup("n=\u00e9\U0001F600", "n").Value);
        Assert.Equal(Presence.Once, FormQuery.Lookup("n+=1", "n ").Presence);
    }

    [Theory]
    [InlineData("n=%")]
    [InlineData("n=%4")]
    [InlineData("n=1%")]
    [InlineData("n=%ZZ")]
    [InlineData("n=%G1")]
    [InlineData("n=%\uff14\uff11")] // fullwidth hex digits are not hex digits
    [InlineData("n=%C3")] // a truncated UTF-8 sequence
    [InlineData("n=%C3%28")]
    [InlineData("n=%FF")]
    [InlineData("n=%C0%AF")] // overlong
    [InlineData("n=%ED%A0%80")] // an encoded surrogate
    public void UndecodableValuesAreOnceButNull(string raw)
    {
        QueryParam n = FormQuery.Lookup(raw, "n");
        Assert.Equal(Presence.Once, n.Presence);
        Assert.Null(n.Value);
    }

    [Fact]
    public void ARawLoneSurrogateIsUndecodable()
    {
        // Not as InlineData: a lone surrogate does not survive xunit's serialization of theory data.
        Assert.Equal(new QueryParam(Presence.Once, null), FormQuery.Lookup("n=\ud800", "n"));
        Assert.Equal(new QueryParam(Presence.Once, null), FormQuery.Lookup("n=1\udc00", "n"));
        Assert.Null(FormQuery.Decode("\ud800x"));
    }

    [Fact]
    public void LongValuesDecode()
    {
        string value = new('x', 5000);
        Assert.Equal(value, FormQuery.Decode(value));
        Assert.Equal(new string(' ', 5000), FormQuery.Decode(new string('+', 5000)));
        Assert.Equal(string.Concat(Enumerable.Repeat("\u00e9", 2000)),
            FormQuery.Decode(string.Concat(Enumerable.Repeat("%C3%A9", 2000))));
    }
}
