using System.Collections;
using System.Net;

namespace Serverlab.Contract.Tests;

/// <summary>Start-up settings from the environment.</summary>
public sealed class SettingsTests
{
    private static Hashtable Env(params (string Name, string Value)[] values)
    {
        var env = new Hashtable();
        foreach ((string name, string value) in values)
        {
            env[name] = value;
        }
        return env;
    }

    [Fact]
    public void WorkersDefaultToTheCpuCount()
    {
        Assert.Equal(Environment.ProcessorCount, ServerSettings.ParseWorkers(null));
        Assert.Equal(Environment.ProcessorCount, ServerSettings.ParseWorkers(""));
        Assert.Equal(3, ServerSettings.ParseWorkers("3"));
        Assert.Equal(1024, ServerSettings.ParseWorkers("1024"));
        Assert.Equal(2, ServerSettings.ParseWorkers("0002"));
    }

    [Theory]
    [InlineData("0")]
    [InlineData("-1")]
    [InlineData("+2")]
    [InlineData("two")]
    [InlineData("\u0663")]
    [InlineData("1025")]
    [InlineData("99999")]
    [InlineData(" 2")]
    [InlineData("2 ")]
    public void BadWorkersNameTheVariable(string value)
    {
        var e = Assert.Throws<InvalidSettingException>(() => ServerSettings.ParseWorkers(value));
        Assert.StartsWith($"WORKERS='{value}' must be an integer from 1 to 1024", e.Message);
    }

    [Fact]
    public void PortAndHost()
    {
        Assert.Equal(8181, ServerSettings.ParsePort(null, 8181));
        Assert.Equal(8181, ServerSettings.ParsePort("", 8181));
        Assert.Equal(9000, ServerSettings.ParsePort("9000", 8181));
        Assert.Throws<InvalidSettingException>(() => ServerSettings.ParsePort("0", 8181));
        Assert.Throws<InvalidSettingException>(() => ServerSettings.ParsePort("65536", 8181));
        Assert.Throws<InvalidSettingException>(() => ServerSettings.ParsePort("http", 8181));
        Assert.Equal(IPAddress.Any, ServerSettings.ParseHost("0.0.0.0"));
        Assert.Equal(IPAddress.Loopback, ServerSettings.ParseHost("127.0.0.1"));
        Assert.Equal(IPAddress.Loopback, ServerSettings.ParseHost("localhost"));
        Assert.Equal(IPAddress.IPv6Any, ServerSettings.ParseHost("::"));
        Assert.Equal(IPAddress.IPv6Loopback, ServerSettings.ParseHost("[::1]"));
        Assert.Throws<InvalidSettingException>(() => ServerSettings.ParseHost("1"));
        Assert.Throws<InvalidSettingException>(() => ServerSettings.ParseHost("example.org"));
    }

    [Fact]
    public void EverySettingFromTheEnvironment()
    {
        ServerSettings settings = ServerSettings.FromEnvironment("C# Test", 8181, Env(
            ("HOST", "127.0.0.1"), ("PORT", "8999"), ("WORKERS", "3"), ("WORKDAY_CALENDAR", Repository.CalendarFile)));
        Assert.Equal("127.0.0.1", settings.Host);
        Assert.Equal(IPAddress.Loopback, settings.ListenAddress);
        Assert.Equal(8999, settings.Port);
        Assert.Equal(3, settings.Workers);
        Assert.Equal(Repository.CalendarFile, settings.CalendarPath);
        Assert.Equal("C# Test", settings.Routes.DisplayName);
        Assert.Equal("2019-05-06", settings.Routes.Workday("at=2019-05-05T10:00").Text);
    }

    [Fact]
    public void DefaultsFromTheEnvironment()
    {
        ServerSettings settings = ServerSettings.FromEnvironment("C# Test", 8181, Env(("WORKDAY_CALENDAR", Repository.CalendarFile)));
        Assert.Equal("0.0.0.0", settings.Host);
        Assert.Equal(IPAddress.Any, settings.ListenAddress);
        Assert.Equal(8181, settings.Port);
        Assert.Equal(Environment.ProcessorCount, settings.Workers);
        Assert.Null(settings.TlsCertificate);
    }

    [Fact]
    public void TlsCertificateAndKeyFromTheEnvironment()
    {
        using var pem = new SelfSignedPem();
        ServerSettings settings = ServerSettings.FromEnvironment("C# Test", 8181, Env(
            ("WORKDAY_CALENDAR", Repository.CalendarFile), ("TLS_CERT", pem.CertPath), ("TLS_KEY", pem.KeyPath)));
        Assert.NotNull(settings.TlsCertificate);
        Assert.Equal(pem.Thumbprint, settings.TlsCertificate.Thumbprint);
        Assert.True(settings.TlsCertificate.HasPrivateKey);
    }

    [Fact]
    public void EmptyTlsVariablesMeanPlainHttp()
    {
        ServerSettings settings = ServerSettings.FromEnvironment("C# Test", 8181, Env(
            ("WORKDAY_CALENDAR", Repository.CalendarFile), ("TLS_CERT", ""), ("TLS_KEY", "")));
        Assert.Null(settings.TlsCertificate);
    }

    [Theory]
    [InlineData("TLS_CERT", "TLS_KEY")]
    [InlineData("TLS_KEY", "TLS_CERT")]
    public void OneTlsVariableAloneNamesTheOther(string set, string unset)
    {
        var e = Assert.Throws<InvalidSettingException>(() => ServerSettings.FromEnvironment("X", 8181, Env(
            ("WORKDAY_CALENDAR", Repository.CalendarFile), (set, "/run/tls/file.pem"))));
        Assert.StartsWith($"{set} is set but {unset} is not: set both", e.Message);
    }

    [Fact]
    public void UnreadableTlsFilesNameBothVariables()
    {
        using var pem = new SelfSignedPem();
        string missing = pem.CertPath + ".missing";
        var absent = Assert.Throws<InvalidSettingException>(
            () => ServerSettings.LoadTlsCertificate(missing, pem.KeyPath));
        Assert.StartsWith($"TLS_CERT={missing}, TLS_KEY={pem.KeyPath}: cannot load the certificate and key", absent.Message);
        // The certificate given as its own key: not a private key.
        var notAKey = Assert.Throws<InvalidSettingException>(
            () => ServerSettings.LoadTlsCertificate(pem.CertPath, pem.CertPath));
        Assert.Contains("cannot load the certificate and key", notAKey.Message);
        Assert.DoesNotContain('\n', notAKey.Message);
    }

    [Fact]
    public void CalendarErrorsNameTheVariableAndPath()
    {
        var unset = Assert.Throws<InvalidSettingException>(() => ServerSettings.FromEnvironment("X", 8181, Env()));
        Assert.StartsWith("WORKDAY_CALENDAR is not set", unset.Message);
        var empty = Assert.Throws<InvalidSettingException>(
            () => ServerSettings.FromEnvironment("X", 8181, Env(("WORKDAY_CALENDAR", ""))));
        Assert.StartsWith("WORKDAY_CALENDAR is not set", empty.Message);

        string dir = Directory.CreateTempSubdirectory("serverlab-settings-").FullName;
        try
        {
            string missing = Path.Combine(dir, "missing.txt");
            var unreadable = Assert.Throws<InvalidSettingException>(
                () => ServerSettings.FromEnvironment("X", 8181, Env(("WORKDAY_CALENDAR", missing))));
            Assert.StartsWith($"WORKDAY_CALENDAR={missing}: cannot read the trading calendar", unreadable.Message);
            Assert.DoesNotContain('\n', unreadable.Message);

            var folder = Assert.Throws<InvalidSettingException>(
                () => ServerSettings.FromEnvironment("X", 8181, Env(("WORKDAY_CALENDAR", dir))));
            Assert.StartsWith($"WORKDAY_CALENDAR={dir}: cannot read", folder.Message);

            string broken = Path.Combine(dir, "broken.txt");
            File.WriteAllText(broken, "2019-05-01\n");
            var malformed = Assert.Throws<InvalidSettingException>(
                () => ServerSettings.FromEnvironment("X", 8181, Env(("WORKDAY_CALENDAR", broken))));
            Assert.Contains("no '# range: FIRST LAST' line", malformed.Message);
        }
        finally
        {
            Directory.Delete(dir, recursive: true);
        }
    }
}
