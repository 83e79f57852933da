using System.Globalization;
using System.Text.Json;
using Serverlab.Contract;
using Serverlab.Contract.Tests;

namespace Serverlab.Stacks.Tests;

/// <summary>
/// The contract's HTTP rules (contracts/README.md) against every C# stack over raw
/// sockets: the same ground as the conformance checker, so that `dotnet test` catches
/// a broken stack before anything is built for a benchmark.
/// </summary>
public sealed class StackHttpTests(StacksFixture stacks) : IClassFixture<StacksFixture>
{
    private const string ContentType = "text/plain; charset=utf-8";
    private static readonly JsonElement Inputs = Repository.Vectors("inputs.json");

    public static TheoryData<string> Stacks() => new(StacksFixture.Builders.Keys);

    private async Task<RawResponse> Get(string stack, string target, params string[] headers)
    {
        await using RawConnection connection = await RawConnection.OpenAsync(stacks.Port(stack));
        return await connection.SendAsync("GET", target, headers);
    }

    /// <summary>The framing every 200 and 400 must have.</summary>
    private static void AssertFraming(RawResponse response, string what)
    {
        Assert.True(response.Header("Content-Type") == ContentType, $"{what}: Content-Type '{response.Header("Content-Type")}'");
        Assert.True(response.Header("Content-Length") == response.Body.Length.ToString(CultureInfo.InvariantCulture),
            $"{what}: Content-Length {response.Header("Content-Length")} for {response.Body.Length} bytes");
        Assert.Empty(response.Values("Transfer-Encoding"));
        Assert.Empty(response.Values("Content-Encoding"));
        Assert.Empty(response.Values("Set-Cookie"));
        string? date = response.Header("Date");
        Assert.NotNull(date);
        DateTime sent = DateTime.ParseExact(date, "r", CultureInfo.InvariantCulture, DateTimeStyles.AdjustToUniversal | DateTimeStyles.AssumeUniversal);
        Assert.InRange((DateTime.UtcNow - sent).TotalSeconds, -2, 5);
    }

    private static void AssertHello(RawResponse response, string stack)
    {
        Assert.Equal(200, response.Status);
        AssertFraming(response, "hello");
        string prefix = $"Hello World, from {StacksFixture.DisplayName(stack)}! ";
        Assert.StartsWith(prefix, response.Text, StringComparison.Ordinal);
        DateTime at = DateTime.ParseExact(response.Text[prefix.Length..], "yyyy-MM-dd HH:mm:ss.fff", CultureInfo.InvariantCulture,
            DateTimeStyles.AdjustToUniversal | DateTimeStyles.AssumeUniversal);
        Assert.InRange((DateTime.UtcNow - at).TotalSeconds, -2, 5);
    }

    [Fact]
    public void EveryCSharpStackIsStarted()
    {
        List<string> folders = Directory.EnumerateDirectories(Repository.ServersDir)
            .Where(dir => !Path.GetFileName(dir).StartsWith('_') && Directory.EnumerateFiles(dir, "*.csproj").Any())
            .Select(dir => Path.GetFileName(dir))
            .Order(StringComparer.Ordinal)
            .ToList();
        List<string> notStarted = folders.Except(StacksFixture.Builders.Keys).ToList();
        Assert.True(notStarted.Count == 0,
            $"C# stacks not started by these tests: {string.Join(", ", notStarted)}. Give each an App.Build, "
            + "add it to StacksFixture.Builders and a ProjectReference to Serverlab.Stacks.Tests.csproj.");
        Assert.Equal(folders, StacksFixture.Builders.Keys.Order(StringComparer.Ordinal));
    }

    [Theory]
    [MemberData(nameof(Stacks))]
    public async Task Hello(string stack)
    {
        RawResponse response = await Get(stack, "/", "Accept-Encoding: gzip, deflate, br");
        AssertHello(response, stack);
        Assert.Equal("Kestrel", response.Header("Server"));
    }

    [Theory]
    [MemberData(nameof(Stacks))]
    public async Task QueryVectors(string stack)
    {
        JsonElement n = Inputs.GetProperty("n");
        JsonElement at = Inputs.GetProperty("at");
        foreach (JsonElement item in n.GetProperty("valid").EnumerateArray())
        {
            string raw = item.GetProperty("raw").GetString()!;
            RawResponse response = await Get(stack, "/?" + raw, "Accept-Encoding: gzip");
            Assert.True(response.Status == 200, $"/?{raw}: {response.StatusLine}");
            AssertFraming(response, raw);
            Assert.Equal(item.GetProperty("kb").GetInt32() * 1000, response.Body.Length);
            Assert.True(response.Body.AsSpan().IndexOfAnyExcept((byte)'X') < 0, $"/?{raw}: every byte is X");
        }
        foreach (JsonElement item in n.GetProperty("hello").EnumerateArray())
        {
            string raw = item.GetProperty("raw").GetString()!;
            AssertHello(await Get(stack, raw.Length == 0 ? "/" : "/?" + raw), stack);
        }
        foreach (JsonElement item in n.GetProperty("invalid").EnumerateArray())
        {
            string raw = item.GetProperty("raw").GetString()!;
            RawResponse response = await Get(stack, "/?" + raw);
            Assert.True(response.Status == 400, $"/?{raw}: {response.StatusLine}");
            AssertFraming(response, raw);
            Assert.Equal(Reply.NError, response.Text);
        }
        foreach (JsonElement item in at.GetProperty("valid").EnumerateArray())
        {
            string raw = item.GetProperty("raw").GetString()!;
            RawResponse response = await Get(stack, "/workday?" + raw);
            Assert.True(response.Status == 200, $"/workday?{raw}: {response.StatusLine}");
            AssertFraming(response, raw);
            Assert.Equal(item.GetProperty("expect").GetString(), response.Text);
        }
        foreach (JsonElement item in at.GetProperty("invalid").EnumerateArray())
        {
            string raw = item.GetProperty("raw").GetString()!;
            RawResponse response = await Get(stack, "/workday?" + raw);
            Assert.True(response.Status == 400, $"/workday?{raw}: {response.StatusLine}");
            AssertFraming(response, raw);
            Assert.Equal(Reply.AtError, response.Text);
        }
    }

    [Theory]
    [MemberData(nameof(Stacks))]
    public async Task WorkdayVectorsOnOneConnection(string stack)
    {
        await using RawConnection connection = await RawConnection.OpenAsync(stacks.Port(stack));
        int count = 0;
        foreach (JsonElement item in Repository.Vectors("workday.json").GetProperty("cases").EnumerateArray())
        {
            string at = item.GetProperty("at").GetString()!;
            RawResponse response = await connection.SendAsync("GET", "/workday?at=" + at);
            Assert.True(response.Status == 200, $"{at}: {response.StatusLine}");
            Assert.True(item.GetProperty("expect").GetString() == response.Text, $"{at}: {response.Text}");
            count++;
        }
        Assert.True(count >= 450, $"only {count} workday cases"); // contracts/README.md promises 450
        Assert.False(await connection.ClosedByServerAsync(TimeSpan.FromMilliseconds(200)), "the connection stays open");
    }

    [Theory]
    [MemberData(nameof(Stacks))]
    public async Task WorkdayNow(string stack)
    {
        var routes = new Routes("now", Repository.Calendar);
        string before = routes.Workday("").Text;
        RawResponse response = await Get(stack, "/workday");
        string after = routes.Workday("").Text;
        Assert.Equal(200, response.Status);
        AssertFraming(response, "/workday");
        Assert.Contains(response.Text, new[] { before, after });
    }

    [Theory]
    [MemberData(nameof(Stacks))]
    public async Task OtherPathsAreNotFound(string stack)
    {
        foreach (string path in new[] { "/nope", "/workday/", "/WORKDAY", "/Workday", "/index.html", "//", "/workday/x", "/x?n=1" })
        {
            RawResponse response = await Get(stack, path);
            Assert.True(response.Status == 404, $"GET {path}: {response.StatusLine}");
        }
        await using RawConnection connection = await RawConnection.OpenAsync(stacks.Port(stack));
        RawResponse post = await connection.SendAsync("POST", "/workday/", "Content-Length: 0");
        Assert.Equal(404, post.Status);
    }

    [Theory]
    [MemberData(nameof(Stacks))]
    public async Task OtherMethodsAreNotAllowed(string stack)
    {
        foreach (string path in new[] { "/", "/workday" })
        {
            foreach (string method in new[] { "POST", "PUT", "DELETE", "PATCH", "OPTIONS" })
            {
                await using RawConnection connection = await RawConnection.OpenAsync(stacks.Port(stack));
                RawResponse response = await connection.SendAsync(method, path, "Content-Length: 0");
                Assert.True(response.Status == 405, $"{method} {path}: {response.StatusLine}");
                Assert.Equal("GET, HEAD", response.Header("Allow"));
            }
        }
    }

    [Theory]
    [MemberData(nameof(Stacks))]
    public async Task HeadIsGetWithoutTheBody(string stack)
    {
        await using RawConnection connection = await RawConnection.OpenAsync(stacks.Port(stack));
        foreach (string target in new[] { "/", "/?n=10", "/workday", "/workday?at=2019-05-05T10:00", "/?n=0", "/workday?at=" })
        {
            RawResponse get = await connection.SendAsync("GET", target);
            RawResponse head = await connection.SendAsync("HEAD", target);
            Assert.Equal(get.Status, head.Status);
            Assert.Equal(ContentType, head.Header("Content-Type"));
            Assert.Equal(get.Body.Length.ToString(CultureInfo.InvariantCulture), head.Header("Content-Length"));
            Assert.Equal(get.Headers.Select(h => h.Key).Order(), head.Headers.Select(h => h.Key).Order());
            Assert.Empty(head.Body);
        }
        // Nothing was sent after the HEAD responses: the next answer on the connection is clean.
        RawResponse next = await connection.SendAsync("GET", "/workday?at=2019-05-05T10:00");
        Assert.Equal("2019-05-06", next.Text);
    }

    [Theory]
    [MemberData(nameof(Stacks))]
    public async Task KeepAliveAcrossRoutes(string stack)
    {
        await using RawConnection connection = await RawConnection.OpenAsync(stacks.Port(stack));
        for (int i = 0; i < 3; i++)
        {
            AssertHello(await connection.SendAsync("GET", "/"), stack);
            Assert.Equal(100_000, (await connection.SendAsync("GET", "/?n=100")).Body.Length);
            Assert.Equal(Reply.NError, (await connection.SendAsync("GET", "/?n=101")).Text);
            Assert.Equal("2019-04-30", (await connection.SendAsync("GET", "/workday?at=2019-04-30T15:00:00")).Text);
        }
        Assert.False(await connection.ClosedByServerAsync(TimeSpan.FromMilliseconds(200)), "the connection stays open");
    }

    [Theory]
    [MemberData(nameof(Stacks))]
    public async Task ConnectionClose(string stack)
    {
        await using RawConnection connection = await RawConnection.OpenAsync(stacks.Port(stack));
        RawResponse response = await connection.SendAsync("GET", "/?n=10", "Connection: close");
        Assert.Equal(10_000, response.Body.Length);
        AssertFraming(response, "Connection: close");
        Assert.True(await connection.ClosedByServerAsync(TimeSpan.FromSeconds(5)), "closed after the response");
    }

    [Theory]
    [MemberData(nameof(Stacks))]
    public async Task Http10WithAndWithoutHost(string stack)
    {
        await using (RawConnection connection = await RawConnection.OpenAsync(stacks.Port(stack)))
        {
            RawResponse response = await connection.ExchangeAsync("GET /?n=1 HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n");
            Assert.Equal(200, response.Status);
            AssertFraming(response, "HTTP/1.0");
            Assert.Equal(1000, response.Body.Length);
        }
        await using (RawConnection connection = await RawConnection.OpenAsync(stacks.Port(stack)))
        {
            AssertHello(await connection.ExchangeAsync("GET / HTTP/1.0\r\n\r\n"), stack);
        }
    }
}
