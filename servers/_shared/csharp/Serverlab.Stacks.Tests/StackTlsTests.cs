using System.Net;
using System.Net.Security;
using Microsoft.AspNetCore.Builder;
using Serverlab.Contract;
using Serverlab.Contract.Tests;

namespace Serverlab.Stacks.Tests;

/// <summary>
/// Every C# stack started in-process with a certificate (TLS_CERT and TLS_KEY, as the
/// harness gives them for FRONT=self): Kestrel itself serves HTTPS, HTTP/2 and
/// HTTP/1.1 chosen by ALPN.
/// </summary>
public sealed class TlsStacksFixture : IAsyncLifetime
{
    private readonly SelfSignedPem _pem = new();
    private readonly Dictionary<string, WebApplication> _apps = [];
    private readonly Dictionary<string, Uri> _urls = [];

    /// <summary>The https address <paramref name="stack"/> listens on.</summary>
    public Uri Url(string stack) => _urls[stack];

    /// <summary>The thumbprint of the certificate every stack serves.</summary>
    public string Thumbprint => _pem.Thumbprint;

    public async Task InitializeAsync()
    {
        foreach ((string stack, Func<ServerSettings, string[], WebApplication> build) in StacksFixture.Builders)
        {
            ServerSettings settings = StacksFixture.InProcessSettings(
                stack, ServerSettings.LoadTlsCertificate(_pem.CertPath, _pem.KeyPath));
            WebApplication app = build(settings, []);
            await app.StartAsync();
            _apps[stack] = app;
            _urls[stack] = new Uri(app.Urls.Single());
        }
    }

    public async Task DisposeAsync()
    {
        foreach (WebApplication app in _apps.Values)
        {
            await app.StopAsync();
            await app.DisposeAsync();
        }
        _pem.Dispose();
    }
}

/// <summary>One answer over TLS, read whole before the client is disposed.</summary>
public sealed record TlsReply(Version Version, HttpStatusCode Status, string? ContentType, long? ContentLength, string Body);

/// <summary>GET / over TLS with HTTP/2 and with HTTP/1.1, trusting exactly the run's certificate.</summary>
public sealed class StackTlsTests(TlsStacksFixture stacks) : IClassFixture<TlsStacksFixture>
{
    public static TheoryData<string> Stacks() => new(StacksFixture.Builders.Keys);

    /// <summary>GET / with exactly <paramref name="version"/>: over TLS, HTTP/2 is only reached by ALPN.</summary>
    private async Task<TlsReply> Get(string stack, Version version)
    {
        using var handler = new SocketsHttpHandler
        {
            SslOptions = new SslClientAuthenticationOptions
            {
                // The fixture's certificate and no other (it is self-signed: no chain to check).
                RemoteCertificateValidationCallback = (_, certificate, _, _) =>
                    certificate?.GetCertHashString() == stacks.Thumbprint,
            },
        };
        using var client = new HttpClient(handler);
        using var request = new HttpRequestMessage(HttpMethod.Get, new Uri(stacks.Url(stack), "/"))
        {
            Version = version,
            VersionPolicy = HttpVersionPolicy.RequestVersionExact,
        };
        using HttpResponseMessage response = await client.SendAsync(request);
        return new TlsReply(response.Version, response.StatusCode, response.Content.Headers.ContentType?.ToString(),
            response.Content.Headers.ContentLength, await response.Content.ReadAsStringAsync());
    }

    [Theory]
    [MemberData(nameof(Stacks))]
    public void ListensOnHttps(string stack) => Assert.Equal("https", stacks.Url(stack).Scheme);

    /// <summary>Every stack with each protocol ALPN can choose.</summary>
    public static TheoryData<string, string> StacksAndProtocols()
    {
        var data = new TheoryData<string, string>();
        foreach (string stack in StacksFixture.Builders.Keys)
        {
            data.Add(stack, "2.0");
            data.Add(stack, "1.1");
        }
        return data;
    }

    [Theory]
    [MemberData(nameof(StacksAndProtocols))]
    public async Task HelloOverEachProtocol(string stack, string version)
    {
        TlsReply reply = await Get(stack, Version.Parse(version));
        Assert.Equal(Version.Parse(version), reply.Version);
        AssertHello(reply, stack);
    }

    private static void AssertHello(TlsReply reply, string stack)
    {
        Assert.Equal(HttpStatusCode.OK, reply.Status);
        Assert.Equal("text/plain; charset=utf-8", reply.ContentType);
        Assert.Equal(reply.Body.Length, reply.ContentLength);
        Assert.StartsWith($"Hello World, from {StacksFixture.DisplayName(stack)}! ", reply.Body, StringComparison.Ordinal);
    }
}
