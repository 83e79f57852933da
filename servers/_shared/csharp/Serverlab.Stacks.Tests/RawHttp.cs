using System.Net.Sockets;
using System.Text;

namespace Serverlab.Stacks.Tests;

/// <summary>One HTTP/1.x response exactly as it came off the socket.</summary>
internal sealed record RawResponse(string StatusLine, int Status, IReadOnlyList<KeyValuePair<string, string>> Headers, byte[] Body)
{
    /// <summary>Every value of header <paramref name="name"/> (case-insensitive), in order.</summary>
    public IReadOnlyList<string> Values(string name) =>
        Headers.Where(h => string.Equals(h.Key, name, StringComparison.OrdinalIgnoreCase)).Select(h => h.Value).ToList();

    /// <summary>The one value of <paramref name="name"/>, or null if absent; fails if it is repeated.</summary>
    public string? Header(string name)
    {
        IReadOnlyList<string> values = Values(name);
        Assert.True(values.Count <= 1, $"{name} sent {values.Count} times");
        return values.Count == 0 ? null : values[0];
    }

    public string Text => Encoding.UTF8.GetString(Body);
}

/// <summary>
/// A deliberately small HTTP/1.x client over a raw socket: a general client would
/// de-chunk, decompress or reconnect silently and hide exactly what is tested.
/// </summary>
internal sealed class RawConnection : IAsyncDisposable
{
    private static readonly TimeSpan Timeout = TimeSpan.FromSeconds(10);
    private readonly TcpClient _client;
    private readonly NetworkStream _stream;
    private readonly List<byte> _buffer = [];

    private RawConnection(TcpClient client)
    {
        _client = client;
        _stream = client.GetStream();
    }

    public static async Task<RawConnection> OpenAsync(int port)
    {
        var client = new TcpClient { NoDelay = true };
        using var cts = new CancellationTokenSource(Timeout);
        await client.ConnectAsync("127.0.0.1", port, cts.Token);
        return new RawConnection(client);
    }

    /// <summary>Sends one request (<c>METHOD target</c>, HTTP/1.1 with Host unless given in full).</summary>
    public async Task<RawResponse> SendAsync(string method, string target, params string[] headers)
    {
        string request = $"{method} {target} HTTP/1.1\r\nHost: 127.0.0.1\r\n" + string.Concat(headers.Select(h => h + "\r\n")) + "\r\n";
        return await ExchangeAsync(request, method == "HEAD");
    }

    /// <summary>Sends <paramref name="request"/> verbatim and reads one response.</summary>
    public async Task<RawResponse> ExchangeAsync(string request, bool head = false)
    {
        using var cts = new CancellationTokenSource(Timeout);
        await _stream.WriteAsync(Encoding.ASCII.GetBytes(request), cts.Token);
        return await ReadResponseAsync(head, cts.Token);
    }

    /// <summary>True if the server closed the connection (end of stream) within <paramref name="wait"/>.</summary>
    public async Task<bool> ClosedByServerAsync(TimeSpan wait)
    {
        if (_buffer.Count > 0)
        {
            return false;
        }
        using var cts = new CancellationTokenSource(wait);
        try
        {
            byte[] one = new byte[1];
            return await _stream.ReadAsync(one, cts.Token) == 0;
        }
        catch (OperationCanceledException)
        {
            return false; // still open
        }
        catch (IOException)
        {
            return true; // reset
        }
    }

    private async Task<RawResponse> ReadResponseAsync(bool head, CancellationToken token)
    {
        int end;
        while ((end = HeadEnd()) < 0)
        {
            Assert.True(await FillAsync(token), "the connection closed before a complete response head");
        }
        string headText = Encoding.ASCII.GetString(_buffer.GetRange(0, end).ToArray());
        _buffer.RemoveRange(0, end + 4);
        string[] lines = headText.Split("\r\n");
        string statusLine = lines[0];
        int status = int.Parse(statusLine.Split(' ')[1], System.Globalization.CultureInfo.InvariantCulture);
        var headers = new List<KeyValuePair<string, string>>();
        foreach (string line in lines.Skip(1))
        {
            int colon = line.IndexOf(':', StringComparison.Ordinal);
            Assert.True(colon > 0, $"malformed header line '{line}'");
            headers.Add(new(line[..colon], line[(colon + 1)..].Trim()));
        }
        var response = new RawResponse(statusLine, status, headers, []);
        byte[] body;
        string? length = response.Header("Content-Length");
        if (head || status is 204 or 304 || (status >= 100 && status < 200))
        {
            body = [];
        }
        else if (length is not null)
        {
            int count = int.Parse(length, System.Globalization.CultureInfo.InvariantCulture);
            while (_buffer.Count < count)
            {
                Assert.True(await FillAsync(token), $"the connection closed after {_buffer.Count} of {count} body bytes");
            }
            body = _buffer.GetRange(0, count).ToArray();
            _buffer.RemoveRange(0, count);
        }
        else
        {
            while (await FillAsync(token))
            {
            }
            body = [.. _buffer];
            _buffer.Clear();
        }
        return response with { Body = body };
    }

    private int HeadEnd()
    {
        for (int i = 0; i + 3 < _buffer.Count; i++)
        {
            if (_buffer[i] == '\r' && _buffer[i + 1] == '\n' && _buffer[i + 2] == '\r' && _buffer[i + 3] == '\n')
            {
                return i;
            }
        }
        return -1;
    }

    private async Task<bool> FillAsync(CancellationToken token)
    {
        byte[] chunk = new byte[16384];
        int read = await _stream.ReadAsync(chunk, token);
        _buffer.AddRange(chunk.AsSpan(0, read));
        return read > 0;
    }

    public ValueTask DisposeAsync()
    {
        _stream.Dispose();
        _client.Dispose();
        return ValueTask.CompletedTask;
    }
}
