using System.Globalization;
using System.Text.Json;

namespace Serverlab.Contract.Tests;

/// <summary>Every case of contracts/vectors/workday.json and inputs.json against the shared logic.</summary>
public sealed class VectorsTests
{
    private static readonly Routes Routes = new(Repository.DisplayName, Repository.Calendar);

    private static readonly JsonElement Inputs = Repository.Vectors("inputs.json");

    private static IEnumerable<JsonElement> Cases(JsonElement array) => array.EnumerateArray();

    private static string Text(JsonElement item, string field) => item.GetProperty(field).GetString()!;

    public static TheoryData<string, string> WorkdayCases()
    {
        var data = new TheoryData<string, string>();
        foreach (JsonElement item in Cases(Repository.Vectors("workday.json").GetProperty("cases")))
        {
            data.Add(Text(item, "at"), Text(item, "expect"));
        }
        return data;
    }

    public static TheoryData<string, int> ValidN()
    {
        var data = new TheoryData<string, int>();
        foreach (JsonElement item in Cases(Inputs.GetProperty("n").GetProperty("valid")))
        {
            data.Add(Text(item, "raw"), item.GetProperty("kb").GetInt32());
        }
        return data;
    }

    public static TheoryData<string> HelloN() => Raw(Inputs.GetProperty("n").GetProperty("hello"));

    public static TheoryData<string> InvalidN() => Raw(Inputs.GetProperty("n").GetProperty("invalid"));

    public static TheoryData<string, string> ValidAt()
    {
        var data = new TheoryData<string, string>();
        foreach (JsonElement item in Cases(Inputs.GetProperty("at").GetProperty("valid")))
        {
            data.Add(Text(item, "raw"), Text(item, "expect"));
        }
        return data;
    }

    public static TheoryData<string> InvalidAt() => Raw(Inputs.GetProperty("at").GetProperty("invalid"));

    private static TheoryData<string> Raw(JsonElement array)
    {
        var data = new TheoryData<string>();
        foreach (JsonElement item in Cases(array))
        {
            data.Add(Text(item, "raw"));
        }
        return data;
    }

    [Fact]
    public void VectorFilesAreComplete()
    {
        // contracts/README.md promises 450 workday cases: a truncated file must not pass quietly.
        Assert.True(WorkdayCases().Count() >= 450, $"only {WorkdayCases().Count()} workday cases");
        Assert.NotEmpty(ValidN());
        Assert.NotEmpty(HelloN());
        Assert.NotEmpty(InvalidN());
        Assert.NotEmpty(ValidAt());
        Assert.NotEmpty(InvalidAt());
    }

    [Theory]
    [MemberData(nameof(WorkdayCases))]
    public void WorkdayRule(string at, string expect)
    {
        DateTime? time = Parameters.ParseLocalTime(at);
        Assert.NotNull(time);
        Assert.Equal(expect, Repository.Calendar.TradingDayOf(time.Value).ToString("yyyy-MM-dd", CultureInfo.InvariantCulture));
    }

    [Theory]
    [MemberData(nameof(WorkdayCases))]
    public void WorkdayRoute(string at, string expect)
    {
        Reply reply = Routes.Workday("at=" + at);
        Assert.Equal(200, reply.Status);
        Assert.Equal(expect, reply.Text);
    }

    [Theory]
    [MemberData(nameof(ValidN))]
    public void ValidNIsKilobytesOfX(string raw, int kb)
    {
        Reply reply = Routes.Root(raw);
        Assert.Equal(200, reply.Status);
        Assert.Equal(kb * 1000, reply.Body.Length);
        Assert.True(reply.Body.Span.IndexOfAnyExcept((byte)'X') < 0, "every byte is 'X'");
    }

    [Theory]
    [MemberData(nameof(HelloN))]
    public void HelloNIsHello(string raw)
    {
        Reply reply = Routes.Root(raw);
        Assert.Equal(200, reply.Status);
        Assert.Matches(@"^Hello World, from Test Stack! \d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2}\.\d{3}$", reply.Text);
    }

    [Theory]
    [MemberData(nameof(InvalidN))]
    public void InvalidNIs400(string raw)
    {
        Reply reply = Routes.Root(raw);
        Assert.Equal(400, reply.Status);
        Assert.Equal("n must be an integer between 1 and 100", reply.Text);
    }

    [Theory]
    [MemberData(nameof(ValidAt))]
    public void ValidAtIsItsTradingDay(string raw, string expect)
    {
        Reply reply = Routes.Workday(raw);
        Assert.Equal(200, reply.Status);
        Assert.Equal(expect, reply.Text);
    }

    [Theory]
    [MemberData(nameof(InvalidAt))]
    public void InvalidAtIs400(string raw)
    {
        Reply reply = Routes.Workday(raw);
        Assert.Equal(400, reply.Status);
        Assert.Equal("at must be a local time formatted YYYY-MM-DDTHH:MM[:SS]", reply.Text);
    }
}
